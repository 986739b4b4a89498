-- series_packs: the series buckets (series_buckets) folded a GPU and two
-- UTC hours (t0_ms, a multiple of 7,200,000) a row: data holds the
-- buckets of every job run on the GPU in that span (write_series_pack.go),
-- about 20 bytes a bucket where a row took 90. t1_ms is the latest end_ms
-- of its buckets, so that a reader of the ends past a job's end or of its
-- last busy bucket skips the packs that cannot hold one. The buckets
-- before the mark series_folded_before (meta, a UTC day's start) are
-- here, those after it in series_buckets: housekeeping folds the days
-- before yesterday, a Go step (foldSeriesStep) those of an old ledger.
CREATE TABLE series_packs (
    gpu_id        BIGINT NOT NULL,
    t0_ms         BIGINT NOT NULL,
    t1_ms         BIGINT NOT NULL,
    data          BYTEA NOT NULL,
    PRIMARY KEY (gpu_id, t0_ms)
);
