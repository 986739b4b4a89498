-- rollup_hourly_sum: rollup_hourly summed over the nodes, per UTC hour
-- (about 40× fewer rows on a cluster of 125 nodes). Reports that need no
-- node read their hours from it: a month in a zone off UTC reads its edge
-- hours here (issue 16).
CREATE TABLE rollup_hourly_sum (
    hour          INTEGER NOT NULL,
    cluster       TEXT NOT NULL,
    user          TEXT NOT NULL,
    account       TEXT NOT NULL,
    partition     TEXT NOT NULL,
    model         TEXT NOT NULL,
    ignored       INTEGER NOT NULL,
    alloc_gpu_s   INTEGER NOT NULL DEFAULT 0,
    used_gpu_s    REAL NOT NULL DEFAULT 0,
    idle_gpu_s    REAL NOT NULL DEFAULT 0,
    sample_s      REAL NOT NULL DEFAULT 0,
    energy_mj     INTEGER NOT NULL DEFAULT 0,
    jobs          INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, cluster, user, account, partition, model, ignored)
) WITHOUT ROWID;

-- The nodes' hours already summed are its facts; the store keeps both
-- from here on, in the same transaction.
INSERT INTO rollup_hourly_sum(hour, cluster, user, account, partition, model, ignored,
    alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs)
SELECT hour, cluster, user, account, partition, model, ignored,
    sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs)
FROM rollup_hourly
GROUP BY hour, cluster, user, account, partition, model, ignored;
