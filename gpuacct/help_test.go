package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
	"github.com/aicloud/gpusuite/internal/testkit/fetch"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
)

// helpApp is gpuacct's command tree as the binary prepares it.
func helpApp() *cli.App {
	app := newApp(Env{Stdin: strings.NewReader(""), Stdout: io.Discard, Stderr: io.Discard, Getenv: func(string) string { return "" }})
	cliwire.Prepare(app)
	return app
}

func TestHelpDefaultsAreTheConfigs(t *testing.T) { cmdline.CheckDefaults(t, helpApp()) }

func TestHelpNamesTheProgramOnce(t *testing.T) { cmdline.CheckNoDoubledName(t, helpApp()) }

// needsCluster are the examples no test runs, each with what it needs.
// Each still goes through gpuacct's command line (cmdline.CheckExamples).
var needsCluster = map[string]string{
	"gpuacct agent                       # on every GPU server (systemd unit gpuacct-agent)":               "NVML GPUs, a GPU server",
	"gpuacct agent                                   # as the unit runs it":                                "NVML GPUs, a GPU server",
	"gpuacct agent --interval 1s --log-level debug   # watch it sample by hand":                            "NVML GPUs, a GPU server",
	"gpuacct agent --incoming-dir /mnt/test/incoming --metrics-listen 127.0.0.1:9466":                      "NVML GPUs, a GPU server",
	"curl -s localhost:9466/metrics | grep gpusuite_gpu_utilization":                                       "a running agent: NVML GPUs",
	"gpuacct agent --metrics default,gpm,nvlink       # GPM counters and NVLink traffic too":               "NVML GPUs, a GPU server",
	"gpuacct profile 4242                              # 200 ms for 10 minutes":                            "an agent on the GPU server running job 4242 (internal/agent's profile tests drive its socket)",
	"gpuacct profile 4242 --interval 100ms --for 1m":                                                       "an agent on the GPU server running job 4242 (internal/agent's profile tests drive its socket)",
	"srun --jobid 4242 --overlap gpuacct profile 4242 --for 30m":                                           "Slurm, and an agent on the GPU server running job 4242",
	"gpuacct notify test --to alice@example.org":                                                           "a mail server at notify.mail.host:port (internal/notify/deliver and gpuacct/notifycmd send to a real one)",
	"gpuacct report budget --slurm          # beside Slurm's GrpTRESMins":                                  "Slurm (scontrol show assoc_mgr; test/slurm's TestBudgetBesideGrpTRESMins runs it)",
	"gpuacct ingest --wait --store-url postgres://gpusuite@db.example.org/gpusuite":                        "a PostgreSQL server",
	"gpuacct serve --store-url postgres://gpusuite@db.example.org/gpusuite?sslmode=verify-full":            "a PostgreSQL server",
	"gpuacct migrate --from /var/lib/gpusuite/acct.db --to postgres://gpusuite@db1/gpusuite":               "a PostgreSQL server",
	"gpuacct migrate --from /var/lib/gpusuite/acct.db --to postgres://gpusuite@db1/gpusuite --verify-only": "a PostgreSQL server",
	"systemctl enable --now gpuacct-serve            # packaging/systemd/gpuacct-serve.service":            "systemd and the installed unit",
	`*/10 * * * * gpuacct check >/dev/null || mail -s "gpuacct" root   # crontab`:                          "cron and mail (its gpuacct check runs as `gpuacct check`)",
	"command[gpuacct]=/usr/bin/gpuacct check                           # nrpe.cfg":                         "Nagios' nrpe (its gpuacct check runs as `gpuacct check`)",
	// Asked by the serve examples while serve runs (serveExample).
	"curl -s localhost:9466/metrics | grep gpuacct_ingest": "a running serve: asked while the serve examples run",
	"curl -s localhost:9466/api/v1/free":                   "a running serve: asked while the serve examples run",

	// Run by slurmctld as its MailProg.
	`gpuacct mailprog -s "Slurm Job_id=42 Name=train Ended, Run time 01:00:00, COMPLETED, ExitCode 0" alice`: "slurmctld's SLURM_JOB_* and a mail server (gpuacct/notifycmd's mailprog tests send to a real one)",
}

// exampleRun is what an example must do on the examples' ledger.
type exampleRun struct {
	// want is in what the example prints (stdout and stderr), or in
	// file when it names one.
	want string
	code int
	// file is a glob, relative to the example's directory, of the file
	// the example writes.
	file string
	// before are gpuacct's arguments run first, each exiting 0.
	before [][]string
	// setup prepares the example's directory (dir of the config file).
	setup func(t *testing.T, dir string)
	// serve: the example is a daemon, run until its /metrics answers
	// and its curl examples are answered, then stopped.
	serve bool
}

// ignored is an ignore of spec run before an example.
func ignored(spec string) [][]string {
	return [][]string{{"ignore", spec, "--reason", "before the example"}}
}

// examples are what each runnable example does. Times are on the real
// clock, as a user's run is: the ledger's jobs are placed around now
// and in the dates the examples name (exampleJobs).
var examples = map[string]exampleRun{
	"gpuacct serve                       # on one head server (systemd unit gpuacct-serve)": {serve: true, want: "gpuacct_ingest_passes_total"},
	"gpuacct serve --interval 10s --metrics-listen 127.0.0.1:9466":                          {serve: true, want: "gpuacct_ingest_passes_total"},
	"gpuacct serve --read-only --metrics-listen :9467  # a second dashboard, no ingest":     {serve: true, want: "gpusuite_build_info"},
	"gpuacct report teams --start 2026-11-01 --period month":                                {want: "nlp "},

	"gpuacct ingest                                  # paths from /etc/gpusuite/gpusuite.toml": {setup: newJobRecords, want: "files 2, records 2"},
	"gpuacct ingest --db /tmp/acct.db --incoming /tmp/incoming --keep delete":                  {setup: newJobRecords, want: "files 2, records 2"},

	"gpuacct report teams                                  # last 7 days":                        {want: "vision "},
	"gpuacct report teams --start 2026-01-01 --end 2027-01-01 --period month":                    {want: "2026-01"},
	"gpuacct report users --teams vision --start now-2days":                                      {want: "alice "},
	"gpuacct report tree --start 11/01/26 --end 12/01/26 --tz Asia/Tokyo":                        {want: "research"},
	"gpuacct report tree -t seconds -P --start now-1days   # compare with sreport -t seconds -P": {want: "vision|alice|"},
	"gpuacct report teams --level 1                        # per top organisation":               {want: "research "},
	"gpuacct report top --by teams --limit 5 --units percent":                                    {want: "vision "},
	"gpuacct report jobs --users alice --sort eff --limit 20":                                    {want: "123456_3"},
	"gpuacct report nodes -P -n --start yesterday --end today   # for scripts":                   {want: "gpu02|"},
	"gpuacct report teams --format json | jq '.rows[] | {team, alloc_gpu_hours}'":                {want: `"alloc_gpu_hours"`},
	"gpuacct report users -M gpu2                          # another cluster of the ledger":      {want: "dave "},
	"gpuacct report teams --all-clusters                   # every cluster, a CLUSTER column":    {want: "gpu2 "},

	"gpuacct report cluster                                # last 7 days":                                         {want: "ALLOCATED"},
	"gpuacct report cluster --start now-1days --period day -t percent":                                            {want: "ALLOCATED"},
	"gpuacct report cluster -t seconds -P -n --start 2026-11-01 --end 2026-12-01   # as sreport -t seconds -P -n": {want: "gpu1|"},
	"gpuacct report cluster --all-clusters --format json":                                                         {want: `"cluster": "gpu1"`},

	"gpuacct jobs --user alice --since 7d             # your own runs: --user me":         {want: "123456_3"},
	"gpuacct jobs --account vision --state completed,timeout --sort mem":                  {want: "lowest memory efficiency first"},
	"gpuacct jobs --array 123456                      # every task of the array job":      {want: "123456_3"},
	"gpuacct jobs --user alice --format csv > runs.csv":                                   {want: "123456_3"},
	"gpuacct jobs --format json | jq '.rows[] | {job, state, elapsed_s}'":                 {want: `"elapsed_s"`},
	"gpuacct report efficiency --by teams":                                                {want: "CPU, memory and time limits per team"},
	"gpuacct report efficiency --users alice --start now-30days   # your own: --users me": {want: "alice"},
	"gpuacct report efficiency --by accounts --format csv":                                {want: "account,runs,cpu_alloc_hours"},
	// the examples' config has no budgets: the table's title and header
	"gpuacct report budget":                                                                               {want: "GPU budgets at"},
	"gpuacct report budget --account vision --period quarter":                                             {want: "GPU budgets at"},
	"gpuacct report budget --at 2026-03-31 --tz Asia/Tokyo --format json":                                 {want: `"report": "budget"`},
	"gpuacct job 123456":                                                                                  {want: "user alice, account vision"},
	"gpuacct job 123456_3 --json | jq '.gpus_detail[] | {uuid, util_mean_pct}'":                           {want: `"util_mean_pct"`},
	"gpuacct job 123456 --db /tmp/acct.db":                                                                {want: "user alice, account vision"},
	"gpuacct job 123456 -M gpu2                 # the job of that cluster, when several share the ledger": {want: "user dave, account nlp"},

	"gpuacct check":                      {want: "OK: "},
	"gpuacct check --stale 30m --lag 5m": {want: "OK: "},
	"gpuacct check --idle-alert 2h":      {want: "OK: "},
	"gpuacct check --no-live":            {want: "OK: "},

	`sudo gpuacct ignore 123456 123457_3 --reason "benchmark run for the vendor"`: {want: "ignore 123456 123457_3: applied"},
	"gpuacct ignore --list":                                     {before: ignored("123456"), want: "123456"},
	"gpuacct ignore --list --log":                               {before: ignored("123456"), want: "before the example"},
	`sudo gpuacct unignore 123456 --reason "counted after all"`: {before: ignored("123456"), want: "unignore 123456: applied"},
	"sudo gpuacct unignore 123456":                              {before: ignored("123456"), want: "unignore 123456: applied"},
	`sudo gpuacct unignore 123456_3 --reason "was a real run"`:  {before: ignored("123456_3"), want: "unignore 123456_3: applied"},

	"gpuacct export jobs --start 2026-01-01 --end 2026-02-01 > jan.csv":                                            {want: "110001"},
	"gpuacct export samples --start now-1day --format jsonl | gzip > day.jsonl.gz":                                 {want: `"util_pct":`},
	"gpuacct export samples --job 123456 > job123456.csv   # one job's GPUs over its run, with its chosen metrics": {want: "GPU-gpu1-gpu01-1"},
	"gpuacct export samples --job 123456 --human   # times in report.tz, figures in their units":                   {want: ",80 %,"},
	"gpuacct export samples --start yesterday --end today --split-dir /tmp/samples   # one file per node":          {file: "samples/*gpu02*", want: "gpu02"},
	"gpuacct export gpus --start 11/01/26 -o gpus.csv":                                                             {file: "gpus.csv", want: "gpu01"},
	"gpuacct export jobs --all-clusters --start 2026-01-01 > all.csv   # every cluster of the ledger":              {want: "gpu2"},

	"gpuacct plot 123456 -o job.png":   {file: "job.png", want: "\x89PNG"},
	"gpuacct plot 123456_3 -o job.svg": {file: "job.svg", want: "<svg"},
	"gpuacct plot --report --start 2026-01-01 --end 2027-01-01 --period month -o teams-2026.png": {file: "teams-2026.png", want: "\x89PNG"},
	"gpuacct plot --report --start now-4weeks --period week --teams vision,nlp -o recent.svg":    {file: "recent.svg", want: "<svg"},

	`gpuacct note add gpu01:3 --until 3d --text "booked for the NeurIPS run"`: {want: "on gpu01:3 until"},
	`gpuacct note add gpu02 --until 2w --text "fan noisy, do not use"`:        {want: "on gpu02 until"},
	`gpuacct note add gpu02:1 --until now+8hours --text "reboot tonight"`:     {want: "on gpu02:1 until"},
	"gpuacct note list":                     {before: notes(1), want: "note 1"},
	"gpuacct note list --all --format json": {before: notes(1), want: `"note 1"`},
	"gpuacct note list --all-clusters":      {before: notes(1), want: "note 1"},
	"gpuacct note rm 12":                    {before: notes(12), want: "12"},

	"gpuacct notify --once":                        {want: "running jobs looked at"},
	"gpuacct notify list":                          {want: "DECIDED"},
	"gpuacct notify list --job 4242":               {want: "DECIDED"},
	"gpuacct notify list --job 4242 --format json": {want: `"rows"`},
	"gpuacct notify preview idle":                  {want: "rule idle"},
	"gpuacct notify preview idle --user alice":     {want: "rule idle"},
	"gpuacct notify off --rule idle":               {want: "gets no more of idle's messages"},
	"gpuacct notify off --rule digest":             {want: "gets no more of digest's messages"},
	"gpuacct notify on --rule idle":                {want: "gets idle's messages again"},

	"gpuacct migrate --from sqlite:/var/lib/gpusuite/acct.db --to sqlite:/srv/acct-copy.db --batch 50000": {want: "every row reads the same"},
}

// notes adds n notes before an example, ids 1 to n.
func notes(n int) [][]string {
	var out [][]string
	for i := 1; i <= n; i++ {
		out = append(out, []string{"note", "add", "gpu01", "--until", "1d", "--text", "note " + strconv.Itoa(i)})
	}
	return out
}

// newJobRecords puts a new job's events in incoming for an ingest example.
func newJobRecords(t *testing.T, dir string) {
	now := time.Now()
	writeRecords(t, filepath.Join(dir, "incoming"), []exJob{{cluster: "gpu1", node: "gpu03", id: 123500, user: "erin", account: "nlp",
		partition: "gpu", gpus: []int{0}, start: now.Add(-time.Hour).Truncate(time.Minute), end: now.Add(-30 * time.Minute).Truncate(time.Minute),
		withoutSamples: true}}, now)
}

// TestHelpExamplesRun runs every example of gpuacct's --help as printed
// on a ledger that holds what they name, each on a copy of it in its own
// directory, under a configuration (GPUSUITE_CONFIG) that points there:
// each must exit 0 (or the code it shows) and print what it is for. The
// paths an example names are the test's: /tmp/acct.db and
// /var/lib/gpusuite/acct.db are the ledger, /tmp/incoming its incoming
// directory, /srv/acct-copy.db and /tmp/samples are in the example's
// directory, which is also the working directory (job.png, gpus.csv);
// a --metrics-listen address is 127.0.0.1:0. No Slurm command is on
// PATH (Slurm unreachable: the board's part of check warns only); ingest
// reads a cluster's capacity from a sacctmgr of the test's.
func TestHelpExamplesRun(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	now := time.Now()
	base := t.TempDir()
	cfg := exampleConfig(t, base)
	writeRecords(t, filepath.Join(base, "incoming"), exampleJobs(now), now)
	if code, out := gpuacct(t, context.Background(), cfg, nil, "ingest"); code != 0 {
		t.Fatalf("ingest of the examples' ledger exits %d: %s", code, out)
	}
	marks, runs := map[string]string{}, map[string]exampleRun{}
	for l, why := range needsCluster {
		marks[l] = why
	}
	for l, why := range demoMarks {
		marks[l] = why
	}
	for l, r := range examples {
		runs[l] = r
	}
	for l, r := range demoRuns {
		runs[l] = r
	}
	ran := map[string]bool{}
	cmdline.CheckExamples(t, helpApp, marks, func(t *testing.T, ex cmdline.Example, args []string) {
		ran[ex.Line] = true
		want, ok := runs[ex.Line]
		if !ok {
			t.Fatalf("%s: example %q: say in examples what it does, or mark it in needsCluster with what it needs", ex.Command, ex.Line)
		}
		dir := t.TempDir()
		copyTree(t, base, dir)
		t.Chdir(dir)
		cfg := filepath.Join(dir, "gpusuite.toml")
		args = exampleArgs(args, dir)
		for _, b := range want.before {
			if code, out := gpuacct(t, context.Background(), cfg, nil, b...); code != 0 {
				t.Fatalf("before the example, gpuacct %s exits %d: %s", strings.Join(b, " "), code, out)
			}
		}
		if want.setup != nil {
			want.setup(t, dir)
		}
		if want.serve {
			serveExample(t, cfg, args, want.want)
			return
		}
		code, out := gpuacct(t, context.Background(), cfg, nil, args[1:]...)
		if code != want.code {
			t.Fatalf("%s: example %q exits %d, want %d: %s", ex.Command, ex.Line, code, want.code, out)
		}
		got := out
		if want.file != "" {
			files, _ := filepath.Glob(filepath.Join(dir, want.file))
			if len(files) == 0 {
				t.Fatalf("%s: example %q wrote no %s; printed %s", ex.Command, ex.Line, want.file, out)
			}
			data, err := os.ReadFile(files[0])
			if err != nil {
				t.Fatal(err)
			}
			got = string(data)
		}
		if !strings.Contains(got, want.want) {
			t.Errorf("%s: example %q: output lacks %q:\n%s", ex.Command, ex.Line, want.want, clip(got))
		}
		if _, filter, ok := strings.Cut(ex.Line, "| jq "); ok {
			checkJQ(t, strings.Trim(filter, "'"), got)
		}
	})
	for l := range runs {
		if !ran[l] {
			t.Errorf("examples lists %q, which no --help shows", l)
		}
	}
}

// jqPick is the one jq filter help examples use: each element of an
// array field, a few of its keys.
var jqPick = regexp.MustCompile(`^\.([a-z_]+)\[\] \| \{([a-z_, ]+)\}$`)

// checkJQ checks that jq's filter, run on the example's output, finds
// what it names: the field is an array of objects, each with every key
// picked (jq would fail on a number, print null for a missing key).
func checkJQ(t *testing.T, filter, out string) {
	t.Helper()
	m := jqPick.FindStringSubmatch(filter)
	if m == nil {
		t.Fatalf("jq filter %q: checkJQ reads only .FIELD[] | {KEY, ...}: teach it this one", filter)
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("jq %q: the output is not one JSON object: %v\n%s", filter, err, clip(out))
	}
	items, ok := doc[m[1]].([]any)
	if !ok || len(items) == 0 {
		t.Fatalf("jq %q: .%s is %T, not an array with elements (jq: cannot iterate)", filter, m[1], doc[m[1]])
	}
	for i, it := range items {
		obj, ok := it.(map[string]any)
		if !ok {
			t.Fatalf("jq %q: .%s[%d] is %T, not an object", filter, m[1], i, it)
		}
		for _, k := range strings.Split(m[2], ",") {
			if k = strings.TrimSpace(k); obj[k] == nil {
				t.Errorf("jq %q: .%s[%d] has no %q (jq prints null)", filter, m[1], i, k)
			}
		}
	}
}

// exampleArgs are an example's arguments with the paths and addresses it
// names made the test's (see TestHelpExamplesRun).
func exampleArgs(args []string, dir string) []string {
	r := strings.NewReplacer(
		"/tmp/acct.db", filepath.Join(dir, "gpuacct.db"),
		"/var/lib/gpusuite/acct.db", filepath.Join(dir, "gpuacct.db"),
		"/tmp/incoming", filepath.Join(dir, "incoming"),
		"/srv/acct-copy.db", filepath.Join(dir, "acct-copy.db"),
		"/tmp/samples", filepath.Join(dir, "samples"),
	)
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = r.Replace(a)
		if i > 0 && args[i-1] == "--metrics-listen" {
			out[i] = "127.0.0.1:0"
		}
	}
	return out
}

// gpuacct runs gpuacct with args under the configuration cfg until it
// ends or ctx does; it returns the exit code and what it printed.
func gpuacct(t *testing.T, ctx context.Context, cfg string, stderr io.Writer, args ...string) (int, string) {
	t.Helper()
	return gpuacctRun(ctx, cfg, stderr, args...)
}

// gpuacctRun runs gpuacct as the binary does, options anywhere, with
// the config file cfg (none when "").
func gpuacctRun(ctx context.Context, cfg string, stderr io.Writer, args ...string) (int, string) {
	var out bytes.Buffer
	if stderr == nil {
		stderr = &out
	}
	getenv := func(k string) string {
		if k == "GPUSUITE_CONFIG" {
			return cfg
		}
		return ""
	}
	app := newApp(Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: stderr, Getenv: getenv})
	cliwire.Prepare(app)
	code := cliwire.Finish(app.Name, app.ErrWriter, app.RunContext(ctx, cliwire.Reorder(app, append([]string{"gpuacct"}, args...))))
	return code, out.String()
}

var listenLine = regexp.MustCompile(`listening for /metrics and the dashboard.*addr=(\S+)`)

// serveExample runs a serve example until it answers on /metrics with
// want, asks it serve's curl examples, and stops it: it must then exit 0.
func serveExample(t *testing.T, cfg string, args []string, want string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var logbuf logs.Buffer
	done := make(chan int, 1)
	go func() {
		code, _ := gpuacct(t, ctx, cfg, &logbuf, args[1:]...)
		done <- code
	}()
	var addr string
	deadline := time.Now().Add(time.Minute)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for addr == "" {
		select {
		case code := <-done:
			t.Fatalf("serve ended (exit %d) before listening: %s", code, logbuf.String())
		case <-tick.C:
		}
		if m := listenLine.FindStringSubmatch(logbuf.String()); m != nil {
			addr = strings.Trim(m[1], `"`)
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve not listening in a minute: %s", logbuf.String())
		}
	}
	// /metrics counts a pass once one ran: ask until it has.
	for body := ""; !strings.Contains(body, want); {
		body = fetchString(t, "http://"+addr+"/metrics")
		if time.Now().After(deadline) {
			t.Fatalf("/metrics lacks %q after a minute:\n%s", want, clip(body))
		}
		<-tick.C
	}
	if !strings.Contains(strings.Join(args, " "), "--read-only") {
		// serve's curl examples, against this serve.
		if body := fetchString(t, "http://"+addr+"/metrics"); !strings.Contains(body, "gpuacct_ingest") {
			t.Errorf("curl -s localhost:9466/metrics | grep gpuacct_ingest: nothing:\n%s", clip(body))
		}
		if body := fetchString(t, "http://"+addr+"/api/v1/free"); !strings.Contains(body, `"free"`) {
			t.Errorf("curl -s localhost:9466/api/v1/free answered:\n%s", clip(body))
		}
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("serve exits %d once stopped: %s", code, logbuf.String())
		}
	case <-time.After(time.Minute):
		t.Fatalf("serve still running a minute after it was stopped: %s", logbuf.String())
	}
}

// copyTree copies the files under from to to: each example has its own
// ledger and directories.
func copyTree(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(dst, info.Mode().Perm())
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		// The configuration names its own directory.
		if rel == "gpusuite.toml" {
			data = bytes.ReplaceAll(data, []byte(from), []byte(to))
		}
		return os.WriteFile(dst, data, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + fmt.Sprintf("… (%d bytes)", len(s))
	}
	return s
}

// fetchString is fetch.Get as text.
func fetchString(t *testing.T, url string) string { return string(fetch.Get(t, url)) }
