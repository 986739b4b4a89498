-- rollup_hourly_sum: rollup_hourly summed over the nodes, per UTC hour
-- (about 40× fewer rows on a cluster of 125 nodes). Reports that need no
-- node read their hours from it: a month in a zone off UTC reads its edge
-- hours here (issue 16).
CREATE TABLE rollup_hourly_sum (
    hour          BIGINT NOT NULL,
    cluster       TEXT COLLATE "C" NOT NULL,
    "user"          TEXT COLLATE "C" NOT NULL,
    account       TEXT COLLATE "C" NOT NULL,
    partition     TEXT COLLATE "C" NOT NULL,
    model         TEXT COLLATE "C" NOT NULL,
    ignored       BIGINT NOT NULL,
    alloc_gpu_s   BIGINT NOT NULL DEFAULT 0,
    used_gpu_s    DOUBLE PRECISION NOT NULL DEFAULT 0,
    idle_gpu_s    DOUBLE PRECISION NOT NULL DEFAULT 0,
    sample_s      DOUBLE PRECISION NOT NULL DEFAULT 0,
    energy_mj     BIGINT NOT NULL DEFAULT 0,
    jobs          BIGINT NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, cluster, "user", account, partition, model, ignored)
);

-- The nodes' hours already summed are its facts; the store keeps both
-- from here on, in the same transaction.
INSERT INTO rollup_hourly_sum(hour, cluster, "user", account, partition, model, ignored,
    alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs)
SELECT hour, cluster, "user", account, partition, model, ignored,
    sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs)
FROM rollup_hourly
GROUP BY hour, cluster, "user", account, partition, model, ignored;
