-- gpu_events: the Xid, ECC and throttling events of GPUs
-- (gpusuite.gpuevent/v1), one row per record; the key applied_keys holds
-- makes a record count once. A job's events are those of the GPUs it held
-- (job_gpus) from its start to 60 s after its end (docs/store.md).
CREATE TABLE gpu_events (
    gpu_id        INTEGER NOT NULL REFERENCES gpus(id),
    t_ns          INTEGER NOT NULL,               -- Unix nanoseconds, as in the record's key
    kind          TEXT NOT NULL,                  -- xid, ecc_single, ecc_double, throttle_start, throttle_end
    code          INTEGER NOT NULL DEFAULT 0,     -- the Xid number; an ECC event's data; 0 for throttling
    reason        TEXT NOT NULL DEFAULT '',       -- throttling: power, thermal, hw_slowdown
    suppressed    INTEGER NOT NULL DEFAULT 0,     -- events of the GPU the agent did not write before this one (a storm)
    PRIMARY KEY (gpu_id, t_ns, kind, code, reason)
) WITHOUT ROWID;

-- job_gpu_metrics: per job and GPU, the chosen catalogue metrics
-- (record.Catalogue) and power_w over the part of each sample inside the
-- job's allocation, weighted by that part's seconds: mean = value_s /
-- seconds. unsupported: the GPU cannot give the metric (the segment
-- header's reason); its figures stay 0.
CREATE TABLE job_gpu_metrics (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    gpu_id        INTEGER NOT NULL REFERENCES gpus(id),
    name          TEXT NOT NULL,
    samples       INTEGER NOT NULL DEFAULT 0,
    seconds       REAL NOT NULL DEFAULT 0,
    value_s       REAL NOT NULL DEFAULT 0,        -- Σ value × seconds counted
    peak          REAL,                           -- highest value of a sample counted
    unsupported   TEXT,
    PRIMARY KEY (job, gpu_id, name)
) WITHOUT ROWID;

-- The chosen metrics of a sample, as a JSON object name → value; NULL
-- with the default set.
ALTER TABLE samples ADD COLUMN metrics TEXT;
