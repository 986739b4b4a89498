-- rollup_zone_day and rollup_zone_week: rollup_hourly_sum summed by the
-- site zone's days (start: the Unix second of local midnight) and ISO
-- weeks (Monday 00:00), so that a report's whole local day or week is one
-- set of rows with no edge hours (issue 35). Empty here: a migration does
-- not know the zone; the writer's housekeeping fills them (meta
-- zone_rollups_tz, zone_rollups_before) and the writer keeps them.
CREATE TABLE rollup_zone_day (
    start INTEGER NOT NULL, cluster TEXT NOT NULL, user TEXT NOT NULL, account TEXT NOT NULL, partition TEXT NOT NULL, model TEXT NOT NULL, ignored INTEGER NOT NULL,
    alloc_gpu_s INTEGER NOT NULL DEFAULT 0, used_gpu_s REAL NOT NULL DEFAULT 0, idle_gpu_s REAL NOT NULL DEFAULT 0,
    sample_s REAL NOT NULL DEFAULT 0, energy_mj INTEGER NOT NULL DEFAULT 0, jobs INTEGER NOT NULL DEFAULT 0, billing REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (start, cluster, user, account, partition, model, ignored)
) WITHOUT ROWID;

CREATE TABLE rollup_zone_week (
    start INTEGER NOT NULL, cluster TEXT NOT NULL, user TEXT NOT NULL, account TEXT NOT NULL, partition TEXT NOT NULL, model TEXT NOT NULL, ignored INTEGER NOT NULL,
    alloc_gpu_s INTEGER NOT NULL DEFAULT 0, used_gpu_s REAL NOT NULL DEFAULT 0, idle_gpu_s REAL NOT NULL DEFAULT 0,
    sample_s REAL NOT NULL DEFAULT 0, energy_mj INTEGER NOT NULL DEFAULT 0, jobs INTEGER NOT NULL DEFAULT 0, billing REAL NOT NULL DEFAULT 0,
    PRIMARY KEY (start, cluster, user, account, partition, model, ignored)
) WITHOUT ROWID;
