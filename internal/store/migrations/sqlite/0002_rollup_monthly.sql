-- rollup_monthly: as rollup_daily, per UTC month; month is the Unix day of
-- the month's first day. Year-long reports read twelve months of these
-- instead of 365 days of rollup_daily, about 30× fewer rows to group
-- (373 k daily rows for a year of 300 users in 40 accounts).
CREATE TABLE rollup_monthly (
    month         INTEGER NOT NULL,
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
    PRIMARY KEY (month, cluster, user, account, partition, model, ignored)
) WITHOUT ROWID;

-- The days already summed are the months' facts; the store keeps both
-- from here on, in the same transaction.
INSERT INTO rollup_monthly(month, cluster, user, account, partition, model, ignored,
    alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs)
SELECT CAST(strftime('%s', day * 86400, 'unixepoch', 'start of month') AS INTEGER) / 86400 AS m,
    cluster, user, account, partition, model, ignored,
    sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs)
FROM rollup_daily
GROUP BY m, cluster, user, account, partition, model, ignored;
