-- s_lo, s_hi: the window (Unix ms, [s_lo, s_hi)) the job's samples on the
-- node are counted against in job_hours: its start (no lower bound,
-- -2^63, while the start is estimated) and end (2^63-1 while it runs).
-- When the job's start or end moves, the samples in between are counted
-- again and these follow. NULL: no sample counted yet.
ALTER TABLE job_nodes ADD COLUMN s_lo INTEGER;
ALTER TABLE job_nodes ADD COLUMN s_hi INTEGER;
UPDATE job_nodes SET
 s_lo = CASE WHEN start IS NOT NULL AND start_estimated = 0 THEN start * 1000 ELSE -9223372036854775808 END,
 s_hi = CASE WHEN end IS NOT NULL THEN end * 1000 ELSE 9223372036854775807 END;
