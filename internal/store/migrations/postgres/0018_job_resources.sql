-- job_resources: job_usage's new name. "Usage" is the GPU-seconds of a job;
-- what sacct says of a run's CPUs, memory and time are its resources.
-- The constraints (and the key's index) carry the table's name too.
ALTER TABLE job_usage RENAME TO job_resources;
ALTER TABLE job_resources RENAME CONSTRAINT job_usage_pkey TO job_resources_pkey;
ALTER TABLE job_resources RENAME CONSTRAINT job_usage_job_fkey TO job_resources_job_fkey;
