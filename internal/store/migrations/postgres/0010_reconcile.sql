-- sacct_checked: whether a finished job run's allocation times, state and
-- exit code were taken from Slurm's accounting (sacct), which the hooks'
-- own times only approach (an epilog runs after Slurm's end). 0 not yet
-- (ingest asks, in batches, each pass), 1 Slurm's times taken, 2 sacct
-- never knew the run within a day of its end (given up: the hooks' times
-- stay, and end_source says so).
ALTER TABLE jobs ADD COLUMN sacct_checked BIGINT NOT NULL DEFAULT 0;
CREATE INDEX jobs_sacct_unchecked ON jobs (id) WHERE sacct_checked = 0;
