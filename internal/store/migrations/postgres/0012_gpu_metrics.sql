-- gpu_events: the Xid, ECC and throttling events of GPUs
-- (gpusuite.gpuevent/v1), one row per record; the key applied_keys holds
-- makes a record count once. A job's events are those of the GPUs it held
-- (job_gpus) from its start to 60 s after its end (docs/store.md).
CREATE TABLE gpu_events (
    gpu_id        BIGINT NOT NULL REFERENCES gpus(id),
    t_ns          BIGINT NOT NULL,                -- Unix nanoseconds, as in the record's key
    kind          TEXT COLLATE "C" NOT NULL,      -- xid, ecc_single, ecc_double, throttle_start, throttle_end
    code          BIGINT NOT NULL DEFAULT 0,      -- the Xid number; an ECC event's data; 0 for throttling
    reason        TEXT COLLATE "C" NOT NULL DEFAULT '', -- throttling: power, thermal, hw_slowdown
    suppressed    BIGINT NOT NULL DEFAULT 0,      -- events of the GPU the agent did not write before this one (a storm)
    PRIMARY KEY (gpu_id, t_ns, kind, code, reason)
);

-- job_gpu_metrics: per job and GPU, the chosen catalogue metrics
-- (record.Catalogue) and power_w over the part of each sample inside the
-- job's allocation, weighted by that part's seconds: mean = value_s /
-- seconds. unsupported: the GPU cannot give the metric (the segment
-- header's reason); its figures stay 0.
CREATE TABLE job_gpu_metrics (
    job           BIGINT NOT NULL REFERENCES jobs(id),
    gpu_id        BIGINT NOT NULL REFERENCES gpus(id),
    name          TEXT COLLATE "C" NOT NULL,
    samples       BIGINT NOT NULL DEFAULT 0,
    seconds       DOUBLE PRECISION NOT NULL DEFAULT 0,
    value_s       DOUBLE PRECISION NOT NULL DEFAULT 0, -- Σ value × seconds counted
    peak          DOUBLE PRECISION,                    -- highest value of a sample counted
    unsupported   TEXT COLLATE "C",
    PRIMARY KEY (job, gpu_id, name)
);

-- The chosen metrics of a sample, as a JSON object name → value; NULL
-- with the default set.
ALTER TABLE samples ADD COLUMN metrics TEXT COLLATE "C";
