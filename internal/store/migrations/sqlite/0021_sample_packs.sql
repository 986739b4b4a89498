-- sample_packs: the samples, packed (write_samples_pack.go): a row per
-- GPU and 5 UTC minutes (t0_ms, a multiple of 300,000) holds that span's
-- samples in time order, 7 bytes a sample where a row a sample took 60.
-- n counts them and t1_ms is the last one's t_ms + interval_ms, so that
-- counts and ends read no packed bytes. Filled from samples by a Go step
-- (packSamplesStep), which then drops samples.
CREATE TABLE sample_packs (
    gpu_id        INTEGER NOT NULL,
    t0_ms         INTEGER NOT NULL,
    n             INTEGER NOT NULL,
    t1_ms         INTEGER NOT NULL,
    data          BLOB NOT NULL,
    PRIMARY KEY (gpu_id, t0_ms)
) WITHOUT ROWID;
