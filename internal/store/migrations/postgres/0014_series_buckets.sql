-- series_buckets: a job run's samples on one GPU summed per 5 minutes
-- (bucket_ms: the bucket's start, Unix ms, a multiple of 300,000), so that
-- the series of a long job reads a few thousand rows instead of every
-- sample (a 20-day job at 10 s: 172,800 samples a GPU). The writer adds
-- each new sample in the transaction that stores it (a sample already
-- stored is not new and adds nothing). A sample shared with other jobs
-- (a jobs list) adds to each job's bucket: its window whole, its
-- utilization × window × share and its energy × share (truncated, as a
-- job's series counts it). Windows are the samples' intervals, uncut:
-- end_ms (the latest t_ms + interval_ms) tells the reader which buckets
-- reach past a job's end, which it reads from the samples. Buckets wholly
-- before the samples' retention are pruned with them (docs/performance.md, the page of a long job).
CREATE TABLE series_buckets (
    gpu_id          BIGINT NOT NULL,
    job             BIGINT NOT NULL,
    restart         BIGINT NOT NULL,
    bucket_ms       BIGINT NOT NULL,
    n               BIGINT NOT NULL,
    first_ms        BIGINT NOT NULL,
    end_ms          BIGINT NOT NULL,
    window_ms       BIGINT NOT NULL,
    idle_ms         BIGINT NOT NULL,
    util_w_ms       BIGINT NOT NULL,
    util_ms         BIGINT NOT NULL,
    util_share_w_ms DOUBLE PRECISION NOT NULL,
    power_w_ms      BIGINT NOT NULL,
    power_ms        BIGINT NOT NULL,
    util_max        BIGINT,
    mem_max         BIGINT,
    energy_mj       BIGINT NOT NULL,
    energy_n        BIGINT NOT NULL,
    PRIMARY KEY (gpu_id, job, restart, bucket_ms)
);

-- backfill: the buckets of the samples stored before this table, once.
INSERT INTO series_buckets(gpu_id, job, restart, bucket_ms, n, first_ms, end_ms, window_ms, idle_ms, util_w_ms, util_ms, util_share_w_ms,
    power_w_ms, power_ms, util_max, mem_max, energy_mj, energy_n)
SELECT gpu_id, job, restart, t_ms - t_ms % 300000, count(*), min(t_ms), max(t_ms + interval_ms), sum(interval_ms),
    sum(CASE WHEN idle <> 0 THEN interval_ms ELSE 0 END),
    coalesce(sum(util * interval_ms), 0), coalesce(sum(CASE WHEN util IS NOT NULL THEN interval_ms END), 0),
    coalesce(sum(util * interval_ms * share), 0),
    coalesce(sum(power_mw * interval_ms), 0), coalesce(sum(CASE WHEN power_mw IS NOT NULL THEN interval_ms END), 0),
    max(util), max(mem_used_mib), coalesce(sum(energy), 0), count(energy)
FROM (
    SELECT gpu_id, t_ms, interval_ms, job, restart, idle, util, mem_used_mib, power_mw, energy_delta_mj AS energy,
        CAST(1 AS DOUBLE PRECISION) AS share
    FROM samples WHERE jobs IS NULL AND job <> 0
    UNION ALL
    SELECT s.gpu_id, s.t_ms, s.interval_ms, CAST(j.value ->> 'job' AS BIGINT), CAST(coalesce(j.value ->> 'restart', '0') AS BIGINT),
        CASE WHEN coalesce(CAST(j.value ->> 'idle' AS BOOLEAN), false) THEN 1 ELSE 0 END, s.util, s.mem_used_mib, s.power_mw,
        CAST(trunc(s.energy_delta_mj * CAST(j.value ->> 'share' AS DOUBLE PRECISION)) AS BIGINT), CAST(j.value ->> 'share' AS DOUBLE PRECISION)
    FROM samples s, jsonb_array_elements(CAST(s.jobs AS jsonb)) AS j(value)
    WHERE s.jobs IS NOT NULL AND CAST(j.value ->> 'job' AS BIGINT) <> 0 AND CAST(j.value ->> 'share' AS DOUBLE PRECISION) <> 0
) AS x
GROUP BY gpu_id, job, restart, t_ms - t_ms % 300000;
