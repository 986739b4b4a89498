-- job_usage: a finished job run's use of its CPUs, memory and time as
-- Slurm's accounting (sacct) has it, taken with its times (reconcile).
-- NULL is "not recorded", never 0: total_cpu_ms and max_rss need a job
-- accounting gather plugin (JobAcctGatherType none records neither),
-- time_limit_s is NULL for UNLIMITED, req_mem when no memory was asked.
CREATE TABLE job_usage (
    job           INTEGER PRIMARY KEY REFERENCES jobs(id),
    alloc_cpus    INTEGER NOT NULL,   -- AllocCPUS, over all nodes
    nodes         INTEGER NOT NULL,   -- NNodes
    elapsed_s     INTEGER NOT NULL,   -- ElapsedRaw
    time_limit_s  INTEGER,            -- TimelimitRaw (minutes) × 60
    req_mem       INTEGER,            -- ReqMem in bytes per node
    total_cpu_ms  INTEGER,            -- TotalCPU: user + system CPU of every step
    max_rss       INTEGER             -- bytes: the highest MaxRSS of any step (one task's peak)
);
