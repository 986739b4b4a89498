-- applied_keys: the record keys whose effect is in the ledger (events by
-- event key, segments by segment key), with the content hash of the file
-- that carried them. Never pruned: a segment shipped again after its
-- samples and its file's ingested_files row are gone is still known, so
-- its samples are not counted twice. About 100 bytes a row.
CREATE TABLE applied_keys (
    key           TEXT PRIMARY KEY,
    sha256        TEXT NOT NULL,
    at            INTEGER NOT NULL
) WITHOUT ROWID;

-- start_estimated: 1 when the job's start on the node is not from its
-- prolog or Slurm: no start event came (the end, then the first sample,
-- stands in). start_source says which: prolog, sacct, end, first_sample.
ALTER TABLE job_nodes ADD COLUMN start_estimated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE job_nodes ADD COLUMN start_source TEXT;
ALTER TABLE jobs ADD COLUMN start_estimated INTEGER NOT NULL DEFAULT 0;
CREATE INDEX job_nodes_start_estimated ON job_nodes (job) WHERE start_estimated = 1;

-- Ends whose start never came: the end stands in, flagged, so that the job
-- has a start (reports, gpuacct job) and ingest refines it.
UPDATE job_nodes SET start = end, start_estimated = 1, start_source = 'end' WHERE start IS NULL AND end IS NOT NULL;
UPDATE jobs SET start = (SELECT min(start) FROM job_nodes WHERE job = jobs.id), start_estimated = 1
 WHERE start IS NULL AND EXISTS (SELECT 1 FROM job_nodes WHERE job = jobs.id AND start_estimated = 1);
