-- sample_packs: the samples, packed (write_samples_pack.go): a row per
-- GPU and 5 UTC minutes (t0_ms, a multiple of 300,000) holds that span's
-- samples in time order. n counts them and t1_ms is the last one's t_ms +
-- interval_ms, so that counts and ends read no packed bytes. Partitioned
-- by UTC month as samples was (sample_packs_YYYYMM, made by the writer).
-- Filled from samples by a Go step (packSamplesStep), which then drops
-- samples and its partitions.
CREATE TABLE sample_packs (
    gpu_id        BIGINT NOT NULL,
    t0_ms         BIGINT NOT NULL,
    n             BIGINT NOT NULL,
    t1_ms         BIGINT NOT NULL,
    data          BYTEA NOT NULL,
    PRIMARY KEY (gpu_id, t0_ms)
) PARTITION BY RANGE (t0_ms);
