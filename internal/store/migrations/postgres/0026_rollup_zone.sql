-- rollup_zone_day and rollup_zone_week: rollup_hourly_sum summed by the
-- site zone's days (start: the Unix second of local midnight) and ISO
-- weeks (Monday 00:00), so that a report's whole local day or week is one
-- set of rows with no edge hours (issue 35). Empty here: a migration does
-- not know the zone; the writer's housekeeping fills them (meta
-- zone_rollups_tz, zone_rollups_before) and the writer keeps them.
CREATE TABLE rollup_zone_day (
    start BIGINT NOT NULL, cluster TEXT COLLATE "C" NOT NULL, "user" TEXT COLLATE "C" NOT NULL, account TEXT COLLATE "C" NOT NULL,
    partition TEXT COLLATE "C" NOT NULL, model TEXT COLLATE "C" NOT NULL, ignored BIGINT NOT NULL,
    alloc_gpu_s BIGINT NOT NULL DEFAULT 0, used_gpu_s DOUBLE PRECISION NOT NULL DEFAULT 0, idle_gpu_s DOUBLE PRECISION NOT NULL DEFAULT 0,
    sample_s DOUBLE PRECISION NOT NULL DEFAULT 0, energy_mj BIGINT NOT NULL DEFAULT 0, jobs BIGINT NOT NULL DEFAULT 0, billing DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (start, cluster, "user", account, partition, model, ignored)
);

CREATE TABLE rollup_zone_week (
    start BIGINT NOT NULL, cluster TEXT COLLATE "C" NOT NULL, "user" TEXT COLLATE "C" NOT NULL, account TEXT COLLATE "C" NOT NULL,
    partition TEXT COLLATE "C" NOT NULL, model TEXT COLLATE "C" NOT NULL, ignored BIGINT NOT NULL,
    alloc_gpu_s BIGINT NOT NULL DEFAULT 0, used_gpu_s DOUBLE PRECISION NOT NULL DEFAULT 0, idle_gpu_s DOUBLE PRECISION NOT NULL DEFAULT 0,
    sample_s DOUBLE PRECISION NOT NULL DEFAULT 0, energy_mj BIGINT NOT NULL DEFAULT 0, jobs BIGINT NOT NULL DEFAULT 0, billing DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (start, cluster, "user", account, partition, model, ignored)
);
