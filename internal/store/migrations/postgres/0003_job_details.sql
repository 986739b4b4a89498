-- details_checked: whether Slurm's accounting (sacct) was asked for what
-- slurmd never hands the Prolog/Epilog: the job's comment and array ids.
-- 0 not yet (ingest asks, in batches, once per pass), 1 sacct answered,
-- 2 sacct never knew the job within a day (given up, so that a dead sacct
-- costs a bounded number of calls).
ALTER TABLE jobs ADD COLUMN details_checked BIGINT NOT NULL DEFAULT 0;
CREATE INDEX jobs_details_unchecked ON jobs (id) WHERE details_checked = 0;
