-- rollup_node_hour, rollup_node_day, rollup_node_month: rollup_hourly
-- without the user and account, per UTC hour, day and month (month: the
-- Unix day of its first day). A report by node reads whole months and
-- days here and only its edge hours per hour: a year by node read
-- rollup_hourly's every row (22 s at 1,000 GPUs, issue 35).
CREATE TABLE rollup_node_hour (
    hour          INTEGER NOT NULL,
    cluster       TEXT NOT NULL,
    partition     TEXT NOT NULL,
    node_id       INTEGER NOT NULL,
    model         TEXT NOT NULL,
    ignored       INTEGER NOT NULL,
    alloc_gpu_s   INTEGER NOT NULL DEFAULT 0,
    used_gpu_s    REAL NOT NULL DEFAULT 0,
    idle_gpu_s    REAL NOT NULL DEFAULT 0,
    sample_s      REAL NOT NULL DEFAULT 0,
    energy_mj     INTEGER NOT NULL DEFAULT 0,
    jobs          INTEGER NOT NULL DEFAULT 0,
    billing       REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, cluster, partition, node_id, model, ignored)
) WITHOUT ROWID;

CREATE TABLE rollup_node_day (
    day           INTEGER NOT NULL,
    cluster       TEXT NOT NULL,
    partition     TEXT NOT NULL,
    node_id       INTEGER NOT NULL,
    model         TEXT NOT NULL,
    ignored       INTEGER NOT NULL,
    alloc_gpu_s   INTEGER NOT NULL DEFAULT 0,
    used_gpu_s    REAL NOT NULL DEFAULT 0,
    idle_gpu_s    REAL NOT NULL DEFAULT 0,
    sample_s      REAL NOT NULL DEFAULT 0,
    energy_mj     INTEGER NOT NULL DEFAULT 0,
    jobs          INTEGER NOT NULL DEFAULT 0,
    billing       REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (day, cluster, partition, node_id, model, ignored)
) WITHOUT ROWID;

CREATE TABLE rollup_node_month (
    month         INTEGER NOT NULL,
    cluster       TEXT NOT NULL,
    partition     TEXT NOT NULL,
    node_id       INTEGER NOT NULL,
    model         TEXT NOT NULL,
    ignored       INTEGER NOT NULL,
    alloc_gpu_s   INTEGER NOT NULL DEFAULT 0,
    used_gpu_s    REAL NOT NULL DEFAULT 0,
    idle_gpu_s    REAL NOT NULL DEFAULT 0,
    sample_s      REAL NOT NULL DEFAULT 0,
    energy_mj     INTEGER NOT NULL DEFAULT 0,
    jobs          INTEGER NOT NULL DEFAULT 0,
    billing       REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (month, cluster, partition, node_id, model, ignored)
) WITHOUT ROWID;

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
SELECT CAST(strftime('%s', day * 86400, 'unixepoch', 'start of month') AS INTEGER) / 86400 AS m,
    cluster, partition, node_id, model, ignored,
    sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)
FROM rollup_node_day
GROUP BY m, cluster, partition, node_id, model, ignored;
