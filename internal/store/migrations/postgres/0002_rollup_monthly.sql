-- rollup_monthly: as rollup_daily, per UTC month; month is the Unix day of
-- the month's first day. Year-long reports read twelve months of these
-- instead of 365 days of rollup_daily, about 30× fewer rows to group
-- (373 k daily rows for a year of 300 users in 40 accounts).
CREATE TABLE rollup_monthly (
    month         BIGINT NOT NULL,
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
    PRIMARY KEY (month, cluster, "user", account, partition, model, ignored)
);

-- The days already summed are the months' facts; the store keeps both
-- from here on, in the same transaction.
INSERT INTO rollup_monthly(month, cluster, "user", account, partition, model, ignored,
    alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs)
SELECT CAST(extract(epoch FROM date_trunc('month', to_timestamp(day * 86400) AT TIME ZONE 'UTC')) AS BIGINT) / 86400 AS m,
    cluster, "user", account, partition, model, ignored,
    sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs)
FROM rollup_daily
GROUP BY m, cluster, "user", account, partition, model, ignored;
