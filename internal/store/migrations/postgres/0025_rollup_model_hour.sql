-- rollup_model_hour: rollup_node_hour without the node, per UTC hour. A
-- report that reads no user, account or node (by partition, by model, a
-- cluster's total) reads a handful of rows an hour here, at any cluster
-- size, where rollup_hourly_sum keeps one a user (issue 35).
CREATE TABLE rollup_model_hour (
    hour BIGINT NOT NULL, cluster TEXT COLLATE "C" NOT NULL, partition TEXT COLLATE "C" NOT NULL, model TEXT COLLATE "C" NOT NULL, ignored BIGINT NOT NULL,
    alloc_gpu_s BIGINT NOT NULL DEFAULT 0, used_gpu_s DOUBLE PRECISION NOT NULL DEFAULT 0, idle_gpu_s DOUBLE PRECISION NOT NULL DEFAULT 0,
    sample_s DOUBLE PRECISION NOT NULL DEFAULT 0, energy_mj BIGINT NOT NULL DEFAULT 0, jobs BIGINT NOT NULL DEFAULT 0, billing DOUBLE PRECISION NOT NULL DEFAULT 0,
    PRIMARY KEY (hour, cluster, partition, model, ignored)
);

-- The node hours summed are its facts; the store keeps it from here on,
-- in the same transaction as the node rollups.
INSERT INTO rollup_model_hour(hour, cluster, partition, model, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing)
SELECT hour, cluster, partition, model, ignored, sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)
FROM rollup_node_hour GROUP BY hour, cluster, partition, model, ignored;
