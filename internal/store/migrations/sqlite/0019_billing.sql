-- billing: billing-unit-seconds as Slurm bills them (TRESBillingWeights ×
-- allocated TRES × seconds; docs/budgets.md), beside the GPU-seconds of
-- the fact table, the rollups and the job totals.
ALTER TABLE job_hours ADD COLUMN billing REAL NOT NULL DEFAULT 0;
ALTER TABLE rollup_hourly ADD COLUMN billing REAL NOT NULL DEFAULT 0;
ALTER TABLE rollup_hourly_sum ADD COLUMN billing REAL NOT NULL DEFAULT 0;
ALTER TABLE rollup_daily ADD COLUMN billing REAL NOT NULL DEFAULT 0;
ALTER TABLE rollup_monthly ADD COLUMN billing REAL NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN billing REAL NOT NULL DEFAULT 0;
-- bill_rate: billing units a second of the job's part on the node, as
-- Slurm billed the job (sacct's AllocTRES billing=N, shared by GPUs);
-- NULL: not answered yet, the weights in force at the start estimate it.
-- r_bill: the rate the rollups hold (as r_start/r_end/r_gpus).
ALTER TABLE job_nodes ADD COLUMN bill_rate REAL;
ALTER TABLE job_nodes ADD COLUMN r_bill REAL;

-- billing_weights: the history of each partition's TRESBillingWeights
-- (scontrol show partition) and PriorityFlags=MAX_TRES (scontrol show
-- config), a row each time they changed; source 'config' rows (partition
-- '') hold the [billing] per-model weights of a site without Slurm's.
-- A job is billed at the row in force at its start, as Slurm bills it.
CREATE TABLE billing_weights (
    cluster       TEXT NOT NULL,
    partition     TEXT NOT NULL,
    source        TEXT NOT NULL,   -- 'slurm' or 'config'
    since         INTEGER NOT NULL, -- Unix seconds
    weights       TEXT NOT NULL,   -- TRESBillingWeights' text; '' none
    max_tres      INTEGER NOT NULL,
    PRIMARY KEY (cluster, partition, source, since)
) WITHOUT ROWID;
