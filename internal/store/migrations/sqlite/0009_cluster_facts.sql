-- Slurm's own record of the cluster's capacity, node outages and
-- reservations, as sacctmgr lists them (ingest refreshes them each pass):
-- what `gpuacct report cluster` counts capacity, down time and reserved
-- time from, as sreport's cluster utilization does (docs/utilization.md).

-- slurm_events: `sacctmgr show event`. A row with node '' is the cluster's
-- own: its GPUs (gres/gpu of its TRES) from start to end. A node's row is
-- an outage (down, drained, ...) of that node's GPUs.
CREATE TABLE slurm_events (
    cluster TEXT NOT NULL,
    node    TEXT NOT NULL,              -- '' for the cluster's rows
    start   INTEGER NOT NULL,           -- Unix seconds
    end     INTEGER,                    -- NULL while in effect
    state   INTEGER NOT NULL DEFAULT 0, -- Slurm's node state bits (StateRaw)
    reason  TEXT NOT NULL DEFAULT '',
    gpus    INTEGER NOT NULL DEFAULT 0, -- gres/gpu of the event's TRES
    seen    INTEGER NOT NULL,           -- Unix seconds of the pass that last saw it
    PRIMARY KEY (cluster, node, start)
);
CREATE INDEX slurm_events_end ON slurm_events (cluster, end);

-- slurm_reservations: `sacctmgr show reservation`, one row per record
-- slurmdbd keeps (a reservation changed mid-way is a new record).
CREATE TABLE slurm_reservations (
    cluster TEXT NOT NULL,
    id      INTEGER NOT NULL,
    start   INTEGER NOT NULL,
    end     INTEGER NOT NULL,
    name    TEXT NOT NULL DEFAULT '',
    flags   TEXT NOT NULL DEFAULT '',   -- as sacctmgr prints them: MAINT,IGNORE_JOBS,...
    nodes   TEXT NOT NULL DEFAULT '',   -- a Slurm hostlist
    gpus    INTEGER NOT NULL DEFAULT 0,
    seen    INTEGER NOT NULL,
    PRIMARY KEY (cluster, id, start)
);
