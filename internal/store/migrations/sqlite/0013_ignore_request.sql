-- jobs.ignore_request: the request (its queue and file name) of the last
-- explicit gpuacct ignore or unignore of the job run; NULL when no
-- request decided it. The tag in a job's comment (report.ignore_tag)
-- decides only the runs no request decided: the writer read that from
-- its directory of applied requests, and past 10,000 of them lost an
-- unignore, so that the next pass ignored the job again.
ALTER TABLE jobs ADD COLUMN ignore_request TEXT;
