-- jobs.ignore_by and ignore_at: who made the last explicit decision on
-- the job run (gpuacct ignore or unignore, or the dashboard's form) and
-- when, in Unix seconds; NULL when none did, or one made before. An
-- ignore's reason names them too, but an unignore clears the reason, so
-- without these the ledger forgot who counted a run again.
ALTER TABLE jobs ADD COLUMN ignore_by TEXT;
ALTER TABLE jobs ADD COLUMN ignore_at INTEGER;
