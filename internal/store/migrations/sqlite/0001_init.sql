-- gpusuite accounting store, schema 1. Times are Unix seconds (UTC) unless a
-- column says _ms. Hours are Unix seconds / 3600, days Unix seconds / 86400.

-- nodes: one row per (cluster, node) that ever shipped a record.
CREATE TABLE nodes (
    id            INTEGER PRIMARY KEY,
    cluster       TEXT NOT NULL,
    name          TEXT NOT NULL,
    last_record   INTEGER,  -- newest record time seen from the node
    last_ingest   INTEGER,  -- when a file of the node was last ingested
    UNIQUE (cluster, name)
);

-- gpus: one row per GPU UUID.
CREATE TABLE gpus (
    id            INTEGER PRIMARY KEY,
    uuid          TEXT NOT NULL UNIQUE,
    node_id       INTEGER NOT NULL REFERENCES nodes(id),
    idx           INTEGER,
    minor         INTEGER,
    model         TEXT NOT NULL DEFAULT '',
    mem_total_mib INTEGER
);
CREATE INDEX gpus_node ON gpus (node_id, model);

-- jobs: one row per Slurm job run (a requeued job is a new run: restart).
CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY,
    cluster       TEXT NOT NULL,
    job_id        INTEGER NOT NULL,
    restart       INTEGER NOT NULL DEFAULT 0,
    array_job_id  INTEGER,
    array_task_id INTEGER,
    user          TEXT NOT NULL DEFAULT '',
    uid           INTEGER,
    gid           INTEGER,
    account       TEXT NOT NULL DEFAULT '',
    team          TEXT NOT NULL DEFAULT '',
    partition     TEXT NOT NULL DEFAULT '',
    nodes         TEXT NOT NULL DEFAULT '',   -- comma-separated, sorted
    gpus          INTEGER NOT NULL DEFAULT 0, -- allocated GPUs over all nodes
    submit        INTEGER,
    start         INTEGER,
    end           INTEGER,
    exit_code     INTEGER,
    exit_signal   INTEGER,
    state         TEXT NOT NULL DEFAULT 'running', -- running, completed, failed, cancelled, ..., unknown
    end_estimated INTEGER NOT NULL DEFAULT 0,     -- 1: end is last sample + grace, not a real end
    end_source    TEXT,                           -- epilog, sacct, last_sample
    ignored       INTEGER NOT NULL DEFAULT 0,
    ignore_reason TEXT,
    comment       TEXT,
    alloc_gpu_s   INTEGER NOT NULL DEFAULT 0,     -- Σ nodes GPUs × (end − start)
    used_gpu_s    REAL NOT NULL DEFAULT 0,        -- Σ samples util × interval
    idle_gpu_s    REAL NOT NULL DEFAULT 0,
    energy_mj     INTEGER NOT NULL DEFAULT 0,
    quality       TEXT NOT NULL DEFAULT '',       -- '; '-separated notes
    UNIQUE (cluster, job_id, restart)
);
CREATE INDEX jobs_start ON jobs (start);
CREATE INDEX jobs_user_start ON jobs (user, start);
CREATE INDEX jobs_account_start ON jobs (account, start);
CREATE INDEX jobs_open ON jobs (start) WHERE end IS NULL;

-- job_nodes: the part of a job on one node, from its prolog/epilog events.
-- r_start/r_end/r_gpus record what is currently added to the rollups.
CREATE TABLE job_nodes (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    node_id       INTEGER NOT NULL REFERENCES nodes(id),
    gpus          INTEGER NOT NULL DEFAULT 0,
    model         TEXT NOT NULL DEFAULT '',
    start         INTEGER,
    end           INTEGER,
    end_estimated INTEGER NOT NULL DEFAULT 0,
    end_source    TEXT,
    exit_code     INTEGER,
    exit_signal   INTEGER,
    last_sample   INTEGER,
    quality       TEXT NOT NULL DEFAULT '',
    r_start       INTEGER,
    r_end         INTEGER,
    r_gpus        INTEGER,
    PRIMARY KEY (job, node_id)
) WITHOUT ROWID;
CREATE INDEX job_nodes_open ON job_nodes (node_id) WHERE end IS NULL;

-- job_gpus: one job on one GPU: identity from the events, figures from the
-- agent's gpusuite.jobgpu/v1 aggregates (highest seq wins).
CREATE TABLE job_gpus (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    gpu_id        INTEGER NOT NULL REFERENCES gpus(id),
    node_id       INTEGER NOT NULL REFERENCES nodes(id),
    minor         INTEGER,
    energy_start_mj INTEGER,
    energy_end_mj INTEGER,
    agg_seq       INTEGER,
    agg_final     INTEGER NOT NULL DEFAULT 0,
    first         INTEGER,
    last          INTEGER,
    samples       INTEGER NOT NULL DEFAULT 0,
    sample_s      REAL NOT NULL DEFAULT 0,
    util_s        REAL NOT NULL DEFAULT 0,
    util_max      INTEGER,
    mem_max_mib   INTEGER,
    mem_total_mib INTEGER,
    energy_mj     INTEGER,
    idle_s        REAL NOT NULL DEFAULT 0,
    quality       TEXT NOT NULL DEFAULT '',       -- JSON object: kind -> samples missing it
    PRIMARY KEY (job, gpu_id)
) WITHOUT ROWID;

-- samples: raw readings, kept for store.sample_retention (default 30 days).
-- Absent values are NULL, never 0; missing names what NVML could not give.
CREATE TABLE samples (
    gpu_id        INTEGER NOT NULL,
    t_ms          INTEGER NOT NULL,
    interval_ms   INTEGER NOT NULL,
    job           INTEGER NOT NULL DEFAULT 0,     -- Slurm job id (first job), 0 for none
    restart       INTEGER NOT NULL DEFAULT 0,
    jobs          TEXT,                           -- JSON [{job,restart,share,idle}] when shared or partial
    idle          INTEGER NOT NULL DEFAULT 0,     -- the agent found the (first) job idle
    util          INTEGER,
    mem_util      INTEGER,
    mem_used_mib  INTEGER,
    power_mw      INTEGER,
    energy_mj     INTEGER,
    energy_delta_mj INTEGER,
    temp_c        INTEGER,
    sm_clock_mhz  INTEGER,
    throttle      INTEGER,
    ecc_errors    INTEGER,
    xid_errors    INTEGER,
    procs         INTEGER,
    foreign_procs INTEGER,
    missing       TEXT,
    PRIMARY KEY (gpu_id, t_ms)
) WITHOUT ROWID;

-- job_hours: the fact table under the rollups: one job on one node in one
-- hour. Never pruned, so a rollup can always be moved when a job changes.
CREATE TABLE job_hours (
    job           INTEGER NOT NULL REFERENCES jobs(id),
    node_id       INTEGER NOT NULL,
    hour          INTEGER NOT NULL,
    alloc_gpu_s   INTEGER NOT NULL DEFAULT 0,
    used_gpu_s    REAL NOT NULL DEFAULT 0,
    idle_gpu_s    REAL NOT NULL DEFAULT 0,
    sample_s      REAL NOT NULL DEFAULT 0,
    energy_mj     INTEGER NOT NULL DEFAULT 0,
    jobs          INTEGER NOT NULL DEFAULT 0,     -- 1 in the hour the job started, on its first node
    PRIMARY KEY (job, node_id, hour)
) WITHOUT ROWID;

-- rollup_hourly: per hour × cluster × user × account × partition × node ×
-- model × ignored. Reports of a day or less read this.
CREATE TABLE rollup_hourly (
    hour          INTEGER NOT NULL,
    cluster       TEXT NOT NULL,
    user          TEXT NOT NULL,
    account       TEXT NOT NULL,
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
    PRIMARY KEY (hour, cluster, user, account, partition, node_id, model, ignored)
) WITHOUT ROWID;

-- rollup_daily: as rollup_hourly without the node, per UTC day. Year-long
-- reports read this (a few hundred thousand rows per year).
CREATE TABLE rollup_daily (
    day           INTEGER NOT NULL,
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
    PRIMARY KEY (day, cluster, user, account, partition, model, ignored)
) WITHOUT ROWID;

-- ingested_files: what each pass took in (pruned with the archive).
CREATE TABLE ingested_files (
    node          TEXT NOT NULL,                  -- the incoming directory name
    name          TEXT NOT NULL,
    sha256        TEXT NOT NULL,
    size          INTEGER NOT NULL,
    records       INTEGER NOT NULL,
    at            INTEGER NOT NULL,
    PRIMARY KEY (node, name)
) WITHOUT ROWID;

-- passes: one row per ingest pass, for gpuacct check and /metrics.
CREATE TABLE passes (
    id            INTEGER PRIMARY KEY,
    started       INTEGER NOT NULL,
    finished      INTEGER,
    ok            INTEGER NOT NULL DEFAULT 0,
    files         INTEGER NOT NULL DEFAULT 0,
    records       INTEGER NOT NULL DEFAULT 0,
    quarantined   INTEGER NOT NULL DEFAULT 0,
    refused       INTEGER NOT NULL DEFAULT 0,
    error         TEXT
);

-- meta: key/value facts about the store (rollup watermark, ...).
CREATE TABLE meta (
    key           TEXT PRIMARY KEY,
    value         TEXT NOT NULL
) WITHOUT ROWID;
