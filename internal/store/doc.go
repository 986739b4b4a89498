// Package store is gpusuite's accounting ledger: one SQLite file or one
// PostgreSQL database, schema from embedded numbered migrations per
// engine, exactly one writer process (docs/store.md).
//
// It is the only package that speaks SQL, so its three jobs share one
// package (Go keeps a type's methods in its package: Batch's writes need
// the engine's transaction, and the reads its pool). The file prefix
// names the room; engine files use no write_ or read_ file but for the
// samples table's columns (the COPY) and the pruned mark (a dropped
// month).
//
// Engine plumbing, engine_*.go:
//
//	engine_open.go        Open, Options, SQLite's file lock and journal, schema migrations (migrations/<engine>/)
//	engine_postgres.go    PostgreSQL's open through pgx's pool, the writer's advisory lock, the schema table
//	engine_conn.go        every statement passes through the engine's dialect (package dialect);
//	                      eachRow and collect read a query's rows, for reads and writes alike
//	engine_errors.go      the driver's errors translated once into ErrBusy, ErrNotLedger, ErrResource
//	engine_fence.go       PostgreSQL: a write only on the session that holds the writer lock, else ErrLockLost
//	engine_reader.go      read-only opens without a writer
//	engine_pipeline_pg.go PostgreSQL: a batch's writes in pipeline mode, their results read with its next read
//	engine_many_pg.go     PostgreSQL: rows of one statement sent as one statement over arrays
//	engine_partitions_pg.go PostgreSQL: samples' month partitions, made ahead, old ones dropped
//
// The write model, write_*.go: a Batch is one write transaction of the
// one writer, with its apply methods:
//
//	write_batch.go      Batch: begin, commit, statements, the batch's caches
//	write_checks.go     what only the ledger can tell of a record (invariant 8): a GPU's owner,
//	                    the job's event from the node, samples overlapping stored ones, energy
//	                    against the stored counter; refused as Rejected (ingest judges the rest)
//	write_checks_mig.go a MIG instance's parent is one of its node's GPUs
//	write_identity.go   nodes, GPUs, jobs
//	write_event.go      job starts and ends;  write_gpuevent.go  GPU events (Xid)
//	write_segment.go    a segment's samples;  write_samples.go, write_samples_pg.go  their rows, PostgreSQL's partitions
//	write_samples_pack.go  a GPU's run of samples packed into one value
//	write_samples_packrow.go  packed rows: a GPU's 5 minutes a row, merged once, converted from rows
//	write_samples_packs.go  the ledger's sample_packs: merging a batch in, decoding a GPU's range, prune, migration 0021's step (read_foreign, read_running and read_stats query the packs directly)
//	write_samples_rows.go  fixtures written as rows of the old samples table, packed
//	write_use.go        job × node × hour figures;  write_rollup.go  Usage and the rollups;  write_jobgpu.go  aggregates
//	write_mig.go        a MIG slice's model ("<parent> MIG <profile>") in job_nodes and its rollup rows
//	write_noderollup.go the node rollups: rollup_hourly without user and account, per hour, day and month
//	write_modelrollup.go rollup_model_hour: the node hours without the node
//	write_zonerollup.go rollup_zone_day, rollup_zone_week: the hours by the site zone's days and weeks
//	write_generated.go  rollups added without jobs, for generated ledgers (bench/scale)
//	write_billing.go    billing weights' history; a job's billing rate (Slurm's, or estimated)
//	write_jobmetrics.go per job × GPU metrics;  write_recount.go  samples counted again when a window moves
//	write_openjobs.go   open and stale jobs;  write_starts.go  estimated starts
//	write_details.go    sacct's comment and array ids;  write_reconcile.go  a finished run's times from sacct
//	write_resources.go  a finished run's CPUs, memory and time limit from sacct (job_resources, NULL: not recorded)
//	write_accounts.go   Slurm's account tree;  write_cluster.go  capacity, node events, reservations
//	write_keys.go       applied record keys, never pruned;  write_files.go  ingested files
//	write_prune.go      retention;  write_passes.go  the pass log;  write_ignore.go  ignore decisions
//	write_series_buckets.go  a job run's samples summed per GPU and 5 minutes, for long series
//	write_series_packs.go    those before yesterday folded a day a row (write_series_pack.go: the codec)
//	write_notify.go     the notifier's outbox (fire-once keys, claims, outcomes) and opt-outs
//	write_notes.go      notes and bookings on nodes and GPUs, added and removed
//
// Typed reads, read_*.go, over plain row structs for report and web:
//
//	read_jobs.go  read_series.go  read_series_bins.go  read_series_buckets.go  read_series_packs.go  read_jobmetrics.go  read_nodes.go
//	read_nodes_overview.go  read_running.go  read_facts.go  read_cluster.go  read_export.go
//	read_export_job.go (one job run's samples)  read_export_energy.go (exports with energy over a window)
//	read_passes.go  read_stats.go  read_invariants.go (hours whose used passes allocated)
//	read_mig.go (whether the ledger holds a MIG instance)
//	read_notify.go (messages kept, the queue, opt-outs, running GPUs' idle windows)
//	read_notes.go (notes and bookings; the nodes and clusters a note may name)
//	read_resources.go (a run's resources from sacct and its seff-style efficiencies)
//	read_noderollup.go (reports by node from the node rollups)  read_modelrollup.go (hours without user, account or node)
//	read_zonerollup.go (local days and weeks of the site's zone, and their mark)
//	read_foreign.go (GPUs whose samples showed a foreign process, over a window)
//	read_lasthour.go (every GPU's samples of a window in one read: the board's last hour at start)
//	read_billing.go (whether the ledger ever billed anything)
//	read_waits.go (how long GPU jobs waited from submit to start, per model and count)
//	read_snapshot.go (ReadSnapshot: a report's statements in one read transaction)
//
// Between ledgers (gpuacct migrate): copy.go (a resumable copy between any
// two ledgers) and copy_verify.go (its row-by-row verification).
package store
