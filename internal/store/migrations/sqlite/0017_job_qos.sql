-- qos: the job's Slurm QOS, as sacct has it (looked up with the comment,
-- details_checked); the idle rule's exempt_qos reads it. NULL: not
-- looked up, or a ledger from before it.
ALTER TABLE jobs ADD COLUMN qos TEXT;
