-- job_resources: job_usage's new name. "Usage" is the GPU-seconds of a job;
-- what sacct says of a run's CPUs, memory and time are its resources.
ALTER TABLE job_usage RENAME TO job_resources;
