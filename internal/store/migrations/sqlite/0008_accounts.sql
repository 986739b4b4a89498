-- Slurm's account tree, as sacctmgr has it (ingest refreshes it each
-- pass): parent is the account above ('root' under the top), so that
-- reports roll teams up to organisations (report tree --level).
CREATE TABLE slurm_accounts (
    cluster TEXT NOT NULL,
    account TEXT NOT NULL,
    parent  TEXT NOT NULL,
    seen    INTEGER NOT NULL,       -- Unix seconds of the pass that last saw it
    PRIMARY KEY (cluster, account)
);
