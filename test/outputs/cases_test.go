package outputs

// The corpus, in the order it runs: later cases read the ledgers and
// request directories earlier ones wrote. Every command and subcommand of
// every binary has its --help here; each binary its --version; usage
// errors and failures with their exit codes; then the data: the demo's
// ledger of a fixed week (2026-10-05 to 2026-10-12, seed 1) read by every
// report, job, export, plot, check and ignore; the live board of
// testdata/fixture/board with notes filed and applied; the hooks'
// records; the container tools' command lines; nfs-sync on a file.

// week is the demo's simulated week, the window of its reports.
var week = []string{"--start", "2026-10-05", "--end", "2026-10-12"}

func cmd(name, bin string, args ...string) tcase {
	return tcase{name: name, bin: bin, args: args}
}

// onDemo runs gpuacct over the demo's ledger (testdata/fixture/demo.toml).
func onDemo(name string, args ...string) tcase {
	return tcase{name: name, bin: "gpuacct", args: args, env: []string{"GPUSUITE_CONFIG={{dir}}/demo.toml"}}
}

// inWeek is onDemo with the week's window after args.
func inWeek(name string, args ...string) tcase {
	return onDemo(name, append(args, week...)...)
}

// onBoard runs gpuacct over the live board of testdata/fixture/board
// (gpusuite.toml: Slurm's view read from its slurm.json), at the test's
// now.
func onBoard(name string, args ...string) tcase {
	return tcase{name: name, bin: "gpuacct", args: args, clock: true}
}

func clocked(c tcase) tcase { c.clock = true; return c }

func rewound(c tcase) tcase { c.rewind = true; return c }

func withFiles(c tcase, globs ...string) tcase { c.files = globs; return c }

func inProject(c tcase) tcase { c.dir = "proj/myproj"; return c }

func helps() []tcase {
	var cs []tcase
	for _, b := range binaries {
		cs = append(cs, cmd(b+"-help", b, "--help"), cmd(b+"-version", b, "--version"))
	}
	cs = append(cs, cmd("prolog-version-dash", "prolog", "-version"), cmd("gpuacct-noargs", "gpuacct"),
		cmd("gpuacct-help-cmd", "gpuacct", "help"), cmd("sim-gpuacct-help", "sim/gpuacct", "--help"))
	for _, sub := range [][]string{
		{"agent"}, {"profile"}, {"ingest"}, {"serve"}, {"report"}, {"report", "teams"}, {"report", "users"},
		{"report", "accounts"}, {"report", "partitions"}, {"report", "nodes"}, {"report", "models"}, {"report", "tree"},
		{"report", "top"}, {"report", "jobs"}, {"report", "cluster"}, {"job"}, {"check"}, {"ignore"}, {"unignore"},
		{"export"}, {"plot"}, {"free"}, {"status"}, {"note"}, {"note", "add"}, {"note", "list"}, {"note", "rm"},
		{"migrate"}, {"demo"},
	} {
		name := "gpuacct"
		for _, s := range sub {
			name += "-" + s
		}
		cs = append(cs, cmd(name+"-help", "gpuacct", append(sub, "--help")...))
	}
	cs = append(cs, cmd("sim-gpuacct-demo-help", "sim/gpuacct", "demo", "--help"),
		cmd("sim-gpuacct-demo-serve-help", "sim/gpuacct", "demo", "serve", "--help"))
	for _, sub := range []string{"list", "rm", "prune", "login", "check"} {
		cs = append(cs, cmd("sbuild-"+sub+"-help", "sbuild", sub, "--help"))
	}
	for _, sub := range []string{"touch", "run", "watch", "calibrate"} {
		cs = append(cs, cmd("nfs-sync-"+sub+"-help", "nfs-sync", sub, "--help"))
	}
	return cs
}

func usageErrors() []tcase {
	return []tcase{
		cmd("gpuacct-unknown-flag", "gpuacct", "--bogus"),
		cmd("gpuacct-unknown-command", "gpuacct", "frobnicate"),
		cmd("gpuacct-missing-config", "gpuacct", "--config", "{{dir}}/missing.toml", "report", "teams"),
		cmd("gpuacct-report-unknown", "gpuacct", "report", "bogus"),
		cmd("gpuacct-report-bad-date", "gpuacct", "report", "teams", "--start", "2026-13-45"),
		cmd("gpuacct-report-bad-format", "gpuacct", "report", "teams", "--format", "xml"),
		cmd("gpuacct-report-bad-period", "gpuacct", "report", "teams", "--period", "year"),
		cmd("gpuacct-report-missing-db", "gpuacct", "report", "teams", "--db", "{{dir}}/missing/gpuacct.db"),
		cmd("gpuacct-job-noargs", "gpuacct", "job"),
		cmd("gpuacct-job-bad-id", "gpuacct", "job", "abc"),
		cmd("gpuacct-job-missing-db", "gpuacct", "job", "1", "--db", "{{dir}}/missing/gpuacct.db"),
		cmd("gpuacct-export-unknown", "gpuacct", "export", "bogus"),
		cmd("gpuacct-export-bad-date", "gpuacct", "export", "jobs", "--start", "yesterday-ish"),
		cmd("gpuacct-check-bad-duration", "gpuacct", "check", "--stale", "soon"),
		cmd("gpuacct-ignore-noargs", "gpuacct", "ignore"),
		cmd("gpuacct-unignore-noargs", "gpuacct", "unignore"),
		cmd("gpuacct-plot-no-output", "gpuacct", "plot", "1"),
		cmd("gpuacct-free-stray-arg", "gpuacct", "free", "extra"),
		cmd("gpuacct-status-bad-format", "gpuacct", "status", "--format", "xml"),
		cmd("gpuacct-note-noargs", "gpuacct", "note"),
		cmd("gpuacct-note-add-noargs", "gpuacct", "note", "add"),
		cmd("gpuacct-note-add-no-text", "gpuacct", "note", "add", "n1", "--until", "4h"),
		cmd("gpuacct-note-rm-bad-id", "gpuacct", "note", "rm", "x"),
		cmd("gpuacct-migrate-noargs", "gpuacct", "migrate"),
		cmd("gpuacct-ingest-unknown-flag", "gpuacct", "ingest", "--bogus"),
		cmd("gpuacct-serve-unknown-flag", "gpuacct", "serve", "--bogus"),
		cmd("gpuacct-agent-unknown-flag", "gpuacct", "agent", "--bogus"),
		cmd("gpuacct-profile-noargs", "gpuacct", "profile"),
		cmd("gpuacct-profile-no-agent", "gpuacct", "--config", "{{dir}}/hooks.toml", "profile", "42", "--for", "1s"),
		cmd("gpuacct-demo-unsimulated", "gpuacct", "demo"),
		cmd("sim-gpuacct-demo-bad-start", "sim/gpuacct", "demo", "--start", "someday"),
		cmd("sbuild-unknown-flag", "sbuild", "--bogus"),
		cmd("sbuild-rm-noargs", "sbuild", "rm"),
		cmd("sbuild-missing-config", "sbuild", "--config", "{{dir}}/missing.toml", "--dry-run"),
		cmd("srun-wrap-bad-gpus", "srun-wrap", "--gpus", "x", "--dry-run"),
		cmd("prolog-unknown-flag", "prolog", "--bogus"),
		cmd("epilog-flag-no-value", "epilog", "-spool-dir"),
		cmd("hook-gpus-unknown-flag", "hook-gpus", "--bogus"),
		{name: "hook-gpus-bad-request", bin: "hook-gpus", stdin: "garbage\n"},
		cmd("nfs-sync-unknown-command", "nfs-sync", "bogus"),
		cmd("nfs-sync-touch-missing", "nfs-sync", "touch", "{{dir}}/missing.txt"),
		cmd("nfs-sync-bad-log-level", "nfs-sync", "--log-level", "loud", "touch", "{{dir}}/nfs/a.txt"),
	}
}

// demoLedger builds the demo's week and reads it.
func demoLedger() []tcase {
	cs := []tcase{
		cmd("demo-build", "sim/gpuacct", "demo", "--dir", "{{dir}}/demo", "--start", "2026-10-05", "--weeks", "1",
			"--nodes", "2", "--gpus", "2"),
		// Right after the demo: the age of its pass. (Its live snapshots,
		// 0.2 s apart, turn stale as the cases run: check-board reads a
		// live board.)
		clocked(onDemo("check-no-live", "check", "--no-live")),
	}
	for _, kind := range []string{"teams", "users", "accounts", "partitions", "nodes", "models", "tree", "top", "jobs", "cluster"} {
		cs = append(cs, inWeek("report-"+kind, "report", kind), inWeek("report-"+kind+"-json", "report", kind, "--format", "json"))
	}
	cs = append(cs,
		inWeek("report-teams-csv", "report", "teams", "--format", "csv"),
		inWeek("report-teams-tsv", "report", "teams", "--format", "tsv"),
		inWeek("report-teams-parsable", "report", "teams", "-P"),
		inWeek("report-nodes-parsable-noheader", "report", "nodes", "-P", "-n"),
		inWeek("report-tree-seconds", "report", "tree", "-t", "seconds", "-P"),
		inWeek("report-users-minutes", "report", "users", "-t", "minutes"),
		inWeek("report-top-percent", "report", "top", "--by", "teams", "--limit", "2", "--units", "percent"),
		inWeek("report-teams-per-day", "report", "teams", "--period", "day"),
		inWeek("report-users-per-week-csv", "report", "users", "--period", "week", "--format", "csv"),
		inWeek("report-teams-month", "report", "teams", "--period", "month", "--tz", "Asia/Tokyo"),
		inWeek("report-jobs-by-eff", "report", "jobs", "--sort", "eff", "--limit", "10"),
		inWeek("report-jobs-by-idle-csv", "report", "jobs", "--sort", "idle", "--limit", "10", "--format", "csv"),
		inWeek("report-users-filtered", "report", "users", "--users", "dave,carol", "-A", "nlp"),
		inWeek("report-teams-level", "report", "teams", "--level", "1"),
		inWeek("report-tree-teams-file", "report", "tree", "--teams-file", "{{dir}}/teams.toml"),
		inWeek("report-teams-level-teams-file", "report", "teams", "--level", "1", "--teams-file", "{{dir}}/teams.toml"),
		inWeek("report-top-teams-file-csv", "report", "top", "--by", "teams", "--teams-file", "{{dir}}/teams.toml", "--format", "csv"),
		inWeek("report-users-teams-filter", "report", "users", "--teams", "perception", "--teams-file", "{{dir}}/teams.toml"),
		onDemo("job-1055-teams-file", "job", "1055", "--teams-file", "{{dir}}/teams.toml"),
		inWeek("report-users-all-clusters", "report", "users", "--all-clusters"),
		inWeek("report-users-other-cluster", "report", "users", "-M", "gpu9"),
		onDemo("job-1055", "job", "1055"),
		onDemo("job-1055-json", "job", "1055", "--json"),
		onDemo("job-1001-tokyo", "job", "1001", "--tz", "Asia/Tokyo"),
		onDemo("job-unknown", "job", "999999"),
		onDemo("export-jobs-csv", "export", "jobs", "--start", "2026-10-05", "--end", "2026-10-06"),
		onDemo("export-jobs-jsonl", "export", "jobs", "--start", "2026-10-05", "--end", "2026-10-06", "--format", "jsonl"),
		onDemo("export-gpus-noheader", "export", "gpus", "--start", "2026-10-05", "--end", "2026-10-06", "-n"),
		onDemo("export-samples-hour", "export", "samples", "--start", "2026-10-05T00:00", "--end", "2026-10-05T01:00"),
		onDemo("export-samples-job", "export", "samples", "--job", "1055"),
		onDemo("export-samples-job-human", "export", "samples", "--job", "1055", "--human"),
		withFiles(onDemo("export-jobs-file", "export", "jobs", "--start", "2026-10-06", "--end", "2026-10-07", "-o", "{{dir}}/export/jobs.csv"), "export/jobs.csv"),
		withFiles(onDemo("export-gpus-split", "export", "gpus", "--start", "2026-10-06", "--end", "2026-10-07", "--split-dir", "{{dir}}/export/split"), "export/split/*"),
		withFiles(onDemo("plot-job-svg", "plot", "1055", "-o", "{{dir}}/export/job-1055.svg"), "export/job-1055.svg"),
		withFiles(onDemo("plot-report-png", "plot", "--report", "--period", "day", "--start", "2026-10-05", "--end", "2026-10-12", "-o", "{{dir}}/export/teams.png"), "export/teams.png"),
		clocked(onDemo("ignore-file", "ignore", "1001", "1003", "--reason", "benchmark runs")),
		clocked(onDemo("ignore-list-pending", "ignore", "--list")),
		clocked(onDemo("ingest-applies-ignore", "ingest")),
		clocked(onDemo("ignore-list", "ignore", "--list")),
		clocked(onDemo("ignore-list-json", "ignore", "--list", "--format", "json")),
		inWeek("report-users-ignored", "report", "users"),
		clocked(onDemo("unignore-file", "unignore", "1003", "--reason", "counted after all")),
		clocked(onDemo("ingest-applies-unignore", "ingest")),
		clocked(onDemo("ignore-log", "ignore", "--list", "--log")),
		onDemo("migrate-to-itself", "migrate", "--to", "{{dir}}/demo/gpuacct.db"),
	)
	return cs
}

// liveBoard reads the fixture's board, files notes, applies them with an
// ingest pass (which creates the board's ledger) and reads it again.
func liveBoard() []tcase {
	return []tcase{
		rewound(onBoard("free-no-ledger", "free")),
		onBoard("status-no-ledger", "status"),
		onBoard("note-add-gpu", "note", "add", "n1:1", "--until", "{{now+30h:flag}}", "--text", "booked for the <b>NeurIPS</b> run, please ask before using it"),
		onBoard("note-add-node", "note", "add", "n2", "--until", "{{now+2h:flag}}", "--text", "fan noisy after the swap"),
		onBoard("note-add-unknown-node", "note", "add", "n9", "--until", "{{now+2h:flag}}", "--text", "who?"),
		onBoard("note-add-past", "note", "add", "n1", "--until", "2020-01-01", "--text", "too late"),
		onBoard("note-list-pending", "note", "list"),
		// The pass applies the notes and quarantines a cut-off record.
		withFiles(onBoard("ingest-applies-notes", "ingest"), "board/quarantine/*/*", "board/incoming/*/*"),
		onBoard("note-list", "note", "list"),
		onBoard("note-list-json", "note", "list", "--format", "json"),
		onBoard("free", "free"),
		onBoard("free-json", "free", "--format", "json"),
		onBoard("status", "status"),
		onBoard("status-json", "status", "--format", "json"),
		onBoard("status-nodes", "status", "n1", "n4"),
		onBoard("free-slurm-file-flag", "free", "--slurm-file", "{{dir}}/board/slurm.json", "--live-dir", "{{dir}}/board/live"),
		onBoard("status-unknown-node", "status", "n9"),
		onBoard("free-no-slurm", "free", "--no-slurm"),
		onBoard("status-slurm-file-missing", "status", "--slurm-file", "{{dir}}/board/missing.json"),
		onBoard("note-rm", "note", "rm", "1"),
		onBoard("ingest-applies-rm", "ingest"),
		onBoard("note-list-all", "note", "list", "--all"),
		onBoard("note-list-all-json", "note", "list", "--all", "--format", "json"),
		onBoard("check-board", "check"),
		// The board's ledger: the demo's counts files its live minute
		// shipped, which vary from run to run.
		onBoard("migrate-copy", "migrate", "--to", "{{dir}}/copy.db"),
		onBoard("migrate-verify", "migrate", "--to", "{{dir}}/copy.db", "--verify-only"),
		onBoard("note-list-all-of-copy", "note", "list", "--all", "--db", "{{dir}}/copy.db"),
	}
}

// hooks records a job's start and end as slurmd runs the hooks, the GPUs
// answered by the simulated hook-gpus beside them.
func hooks() []tcase {
	env := []string{"SLURM_JOB_ID=42", "SLURM_JOB_USER=alice", "SLURM_JOB_UID=1000", "SLURMD_NODENAME=gpu01",
		"SLURM_JOB_GPUS=0,1", "SLURM_JOB_ACCOUNT=vision", "SLURM_JOB_PARTITION=gpu"}
	prolog := tcase{name: "prolog-records-start", bin: "sim/prolog", args: []string{"--config", "{{dir}}/hooks.toml"}, env: env,
		files: []string{"spool/*.json", "spool/runs/*"}, clock: true}
	epilog := prolog
	epilog.name, epilog.bin = "epilog-records-end", "sim/epilog"
	return []tcase{
		prolog, epilog,
		{name: "hook-gpus-simulated", bin: "sim/hook-gpus", clock: true,
			stdin: `{"gpu":{"Backend":"simulated","Simulated":{"Model":"h100","Count":2}},"node":"gpu01","nvml_timeout":"500ms","minors":[0,1]}` + "\n"},
		{name: "hook-gpus-unknown-model", bin: "sim/hook-gpus",
			stdin: `{"gpu":{"Backend":"simulated"},"node":"gpu01","nvml_timeout":"500ms","minors":[0]}` + "\n"},
	}
}

// containers prints the srun and sbatch lines sbuild and srun-wrap would
// run for the project directory proj/myproj.
func containers() []tcase {
	return []tcase{
		inProject(cmd("sbuild-dry-run", "sbuild", "--dry-run", "--skip-checks")),
		inProject(cmd("sbuild-dry-run-image-setup", "sbuild", "--dry-run", "--skip-checks", "--setup", "setup.sh",
			"--save", "{{dir}}/myproj.sqsh", "--mount", "/data/x:/x:ro", "nvcr.io/nvidia/pytorch:24.05-py3", "--", "--nodelist=gpu03")),
		inProject(cmd("sbuild-dry-run-name", "sbuild", "--dry-run", "--skip-checks", "--name", "other", "--gpus", "1", "--partition", "long", "--time", "30")),
		inProject(cmd("srun-wrap-dry-run", "srun-wrap", "--dry-run")),
		inProject(cmd("sbuild-list", "sbuild", "list")),
		inProject(cmd("sbuild-rm-missing", "sbuild", "rm", "nosuch", "--yes")),
		inProject(cmd("sbuild-prune", "sbuild", "prune", "--yes")),
		withFiles(inProject(cmd("sbuild-login", "sbuild", "login", "--key-file", "{{dir}}/proj/ngc-key.txt")), "home/.config/enroot/.credentials"),
		inProject(cmd("srun-wrap-no-srun", "srun-wrap", "true")),
		inProject(cmd("srun-wrap-dry-run-cmd", "srun-wrap", "--dry-run", "--gpus", "4", "-p", "long", "-t", "2-00:00:00",
			"--mount", "/data/datasets:/datasets:ro", "--env", "WANDB_MODE=offline", "python", "train.py", "--epochs", "10")),
		inProject(cmd("srun-wrap-dry-run-batch", "srun-wrap", "--dry-run", "--batch", "-t", "1:00:00", "train.sh", "--lr", "0.1")),
		inProject(cmd("srun-wrap-dry-run-separator", "srun-wrap", "--dry-run", "--name", "myproj", "--", "bash", "-c", "nvidia-smi; python -V")),
	}
}

func nfsSync() []tcase {
	return []tcase{
		clocked(cmd("nfs-sync-touch", "nfs-sync", "touch", "{{dir}}/nfs/a.txt")),
		clocked(cmd("nfs-sync-run", "nfs-sync", "run", "--", "/bin/true")),
	}
}

func corpus() []tcase {
	var cs []tcase
	for _, part := range [][]tcase{helps(), usageErrors(), demoLedger(), liveBoard(), hooks(), containers(), nfsSync()} {
		cs = append(cs, part...)
	}
	return cs
}
