-- rollup_node_hour, rollup_node_day, rollup_node_month: rollup_hourly
-- without the user and account, per UTC hour, day and month (month: the
-- Unix day of its first day). A report by node reads whole months and
-- days here and only its edge hours per hour: a year by node read
-- rollup_hourly's every row (22 s at 1,000 GPUs, issue 35).
CREATE TABLE rollup_node_hour (
    hour          BIGINT NOT NULL,
    cluster       TEXT COLLATE "C" NOT NULL,
    partition     TEXT COLLATE "C" NOT NULL,
    node_id       BIGINT NOT NULL,
    model         TEXT COLLATE "C" NOT NULL,
    ignored       BIGINT NOT NULL,
    alloc_gpu_s   BIGINT NOT NULL DEFAULT 0,
    used_gpu_s    DOUBLE PRECISION NOT NULL DEFAULT 0,
    idle_gpu_s    DOUBLE PRECISION NOT NULL DEFAULT 0,
    sample_s      DOUBLE PRECISION NOT NULL DEFAULT 0,
    energy_mj     BIGINT NOT NULL DEFAULT 0,
    jobs          BIGINT NOT NULL DEFAULT 0,
    billing       DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, cluster, partition, node_id, model, ignored)
);

CREATE TABLE rollup_node_day (
    day           BIGINT NOT NULL,
    cluster       TEXT COLLATE "C" NOT NULL,
    partition     TEXT COLLATE "C" NOT NULL,
    node_id       BIGINT NOT NULL,
    model         TEXT COLLATE "C" NOT NULL,
    ignored       BIGINT NOT NULL,
    alloc_gpu_s   BIGINT NOT NULL DEFAULT 0,
    used_gpu_s    DOUBLE PRECISION NOT NULL DEFAULT 0,
    idle_gpu_s    DOUBLE PRECISION NOT NULL DEFAULT 0,
    sample_s      DOUBLE PRECISION NOT NULL DEFAULT 0,
    energy_mj     BIGINT NOT NULL DEFAULT 0,
    jobs          BIGINT NOT NULL DEFAULT 0,
    billing       DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (day, cluster, partition, node_id, model, ignored)
);

CREATE TABLE rollup_node_month (
    month         BIGINT NOT NULL,
    cluster       TEXT COLLATE "C" NOT NULL,
    partition     TEXT COLLATE "C" NOT NULL,
    node_id       BIGINT NOT NULL,
    model         TEXT COLLATE "C" NOT NULL,
    ignored       BIGINT NOT NULL,
    alloc_gpu_s   BIGINT NOT NULL DEFAULT 0,
    used_gpu_s    DOUBLE PRECISION NOT NULL DEFAULT 0,
    idle_gpu_s    DOUBLE PRECISION NOT NULL DEFAULT 0,
    sample_s      DOUBLE PRECISION NOT NULL DEFAULT 0,
    energy_mj     BIGINT NOT NULL DEFAULT 0,
    jobs          BIGINT NOT NULL DEFAULT 0,
    billing       DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (month, cluster, partition, node_id, model, ignored)
);

-- The nodes' hours already summed are their facts (one pass over
-- rollup_hourly, then over the far smaller hours); the store keeps all
-- from here on, in the same transaction.
INSERT INTO rollup_node_hour(hour, cluster, partition, node_id, model, ignored,
    alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing)
SELECT hour, cluster, partition, node_id, model, ignored,
    sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)
FROM rollup_hourly
GROUP BY hour, cluster, partition, node_id, model, ignored;

INSERT INTO rollup_node_day(day, cluster, partition, node_id, model, ignored,
    alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing)
SELECT hour / 24 AS d, cluster, partition, node_id, model, ignored,
    sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)
FROM rollup_node_hour
GROUP BY d, cluster, partition, node_id, model, ignored;

INSERT INTO rollup_node_month(month, cluster, partition, node_id, model, ignored,
    alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing)
SELECT CAST(extract(epoch FROM date_trunc('month', to_timestamp(day * 86400) AT TIME ZONE 'UTC')) AS BIGINT) / 86400 AS m,
    cluster, partition, node_id, model, ignored,
    sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)
FROM rollup_node_day
GROUP BY m, cluster, partition, node_id, model, ignored;
