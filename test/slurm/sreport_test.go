package slurm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// sreportTest is the accounts and users of one run of TestSreport,
// prefixed with its name: the accounts are new each run (sreport rounds
// windows to hours, so an earlier run's jobs would share the window), so
// that neither other tests' jobs nor earlier runs' are in its sreport rows.
type sreportTest struct {
	accounts []string
	// users: each user's accounts, the default first; sreport1 is in both.
	users map[string][]string
}

func newSreportTest(tag string) sreportTest {
	a, b := "sreport-a-"+tag, "sreport-b-"+tag
	return sreportTest{accounts: []string{a, b}, users: map[string][]string{"sreport1": {a, b}, "sreport2": {b}}}
}

// sreportDelayed is the user whose jobs' epilog the harness delays 1.5 s
// (hooks/epilog.delay), as a busy node's would run late.
const sreportDelayed = "sreport1"

// sreportJob is one submission of TestSreport.
type sreportJob struct {
	name, user string
	args       []string
	// cancel: scancel once it runs; requeue: scontrol requeue once it
	// runs, so it runs twice.
	cancel, requeue bool
}

// slurmRunRow is one run of a job as `sacct -X -D` lists it.
type slurmRunRow struct {
	id                uint64
	jobID, user, acct string
	gpus              int64
	elapsed           int64
	start, end        int64
	state, exit       string
}

// TestSreport runs jobs of 1 to 4 GPUs, an array, a cancelled, a failed
// and a requeued job, by a user in two accounts, with one user's epilog
// delayed past Slurm's end; a ledger ingested with sacct takes Slurm's
// times, so that each run's allocated GPU-seconds are sacct's
// gres/gpu × ElapsedRaw, and after slurmdbd rolls the window's hours up,
// `gpuacct report` per account and per user equals
// `sreport -t seconds -T gres/gpu cluster AccountUtilizationByUser` to the
// second. A ledger whose sacct cannot be reached keeps the hooks' times,
// says so (end_source epilog in `gpuacct job --json`), and charges the
// delayed user's jobs more than Slurm does.
func TestSreport(t *testing.T) {
	c := slurm.Get(t)
	gpuacct := slurm.Binary(t, "gpuacct")
	st := newSreportTest(strconv.FormatInt(time.Now().Unix(), 36))
	addSreportAssociations(t, c, st)
	a, b := st.accounts[0], st.accounts[1]
	delay := filepath.Join(c.Path("GPUSUITE_SLURM_DIR"), "hooks", "epilog.delay")
	if err := os.WriteFile(delay, []byte("1.5 "+sreportDelayed+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Remove(delay) })

	first := time.Now()
	jobs := []sreportJob{
		{name: "cancelled", user: "sreport1", args: []string{"-A", a, "--gres=gpu:1", "--wrap", "sleep 300"}, cancel: true},
		{name: "requeued", user: "sreport2", args: []string{"-A", b, "--gres=gpu:1", "--requeue", "--wrap", "sleep 8"}, requeue: true},
		{name: "one GPU", user: "sreport1", args: []string{"-A", a, "--gres=gpu:1", "--wrap", "sleep 3"}},
		{name: "two GPUs, the other account", user: "sreport1", args: []string{"-A", b, "--gres=gpu:2", "--wrap", "sleep 4"}},
		{name: "three GPUs", user: "sreport2", args: []string{"-A", b, "--gres=gpu:3", "--wrap", "sleep 3"}},
		{name: "four GPUs", user: "sreport1", args: []string{"-A", a, "--gres=gpu:4", "--wrap", "sleep 3"}},
		{name: "failed", user: "sreport2", args: []string{"-A", b, "--gres=gpu:2", "--wrap", "sleep 2; exit 3"}},
		{name: "array", user: "sreport1", args: []string{"-A", b, "--gres=gpu:1", "--array=0-1", "--wrap", "sleep 2"}},
	}
	ids := make([]uint64, len(jobs))
	for i, j := range jobs {
		ids[i] = c.Sbatch(t, j.user, j.args...)
	}
	for i, j := range jobs {
		id := strconv.FormatUint(ids[i], 10)
		switch {
		case j.cancel:
			waitRan(t, c, ids[i], 3*time.Second)
			c.Run(t, "", "scancel", id)
		case j.requeue:
			waitRan(t, c, ids[i], 3*time.Second)
			c.Run(t, "", "scontrol", "requeue", id)
			// A requeued batch job may wait for a begin time; let it run
			// again at once.
			c.WaitState(t, ids[i], "PENDING", time.Minute)
			c.Run(t, "", "scontrol", "update", "jobid="+id, "starttime=now")
		}
	}
	// The array's two tasks are two rows; the requeued job's two runs
	// one (sacct -X without -D lists its last run).
	c.WaitAccounted(t, 4*time.Minute, len(jobs)+1, ids...)
	runs := sacctRuns(t, c, ids)
	if len(runs) != len(jobs)+2 {
		t.Fatalf("sacct -D has %d runs, want %d (an array of 2, a job run twice): %+v", len(runs), len(jobs)+2, runs)
	}
	// squeue lists a job until its epilog is done: then every hook of
	// every run has written what it will.
	for _, id := range ids {
		c.WaitGone(t, id, 2*time.Minute)
	}

	// The window: whole hours around the jobs, as sreport rounds any
	// window to hours; slurmdbd rolls them up now, not at the next hour.
	from := first.UTC().Truncate(time.Hour)
	to := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	const ts = "2006-01-02T15:04:05"
	sreported := sreportSeconds(t, c, st, from, to)
	t.Logf("sreport -t seconds -T gres/gpu, %s to %s: %v", from.Format(ts), to.Format(ts), sreported)

	requeued := strconv.FormatUint(ids[1], 10)
	t.Run("reconciled", func(t *testing.T) {
		l, quarantined := sreportLedger(t, gpuacct, c, ids, "sacct")
		t.Run("requeued job's events taken", func(t *testing.T) {
			// The epilog of a requeued run sees the next run's restart
			// count (Slurm counts the requeue first): unless the hooks
			// name its end by its own run, the next run's start comes
			// after "its" end (quarantined, when slurmd runs the prolog
			// again) and the next run's own end is a duplicate.
			end := filepath.Join(c.Path("GPUSUITE_SLURM_SPOOL"), record.EventFileName("testcl", ids[1], 0, c.Path("GPUSUITE_SLURM_NODE"), record.JobEnd))
			if _, err := os.Stat(end); err != nil {
				t.Errorf("the requeued run of job %s has no end event of its own: %v", requeued, err)
			}
			if slices.ContainsFunc(quarantined, func(q string) bool { return strings.HasPrefix(q, "event.testcl."+requeued+".") }) {
				t.Errorf("ingest quarantined events of the requeued job %s: %v", requeued, quarantined)
			}
		})
		for _, q := range quarantined {
			if !strings.HasPrefix(q, "event.testcl."+requeued+".") && !strings.HasSuffix(q, ".reason") {
				t.Errorf("ingest quarantined %s", q)
			}
		}
		got := ledgerRuns(t, l)
		restart := map[uint64]int{}
		for _, r := range runs {
			k := fmt.Sprintf("%d+%d", r.id, restart[r.id])
			restart[r.id]++
			g, ok := got[k]
			if !ok {
				t.Errorf("run %s (%s) is not in the ledger", k, r.jobID)
				continue
			}
			want := ledgerRun{User: r.user, Account: r.acct, GPUs: r.gpus, Start: r.start, End: r.end, AllocGPUS: r.gpus * r.elapsed,
				State: strings.ToLower(r.state), Exit: sacctExit(t, r.exit), EndSource: "sacct", Checked: 1}
			if diff := cmp.Diff(want, g); diff != "" {
				t.Errorf("run %s (%s): sacct's gres/gpu=%d × ElapsedRaw=%d = %d GPU-s; ledger (-sacct +ledger):\n%s", k, r.jobID, r.gpus, r.elapsed, r.gpus*r.elapsed, diff)
			}
		}
		if diff := cmp.Diff(sreported, gpuacctSeconds(t, l, st, from, to)); diff != "" {
			t.Errorf("GPU-seconds per account and user, %s to %s (-sreport +gpuacct):\n%s", from.Format(ts), to.Format(ts), diff)
		}
		if src := jobEndSources(t, l, ids[2]); !slices.Equal(src, []string{"sacct"}) {
			t.Errorf("gpuacct job %d --json: node end sources %q, want [sacct]", ids[2], src)
		}
	})

	t.Run("sacct unreachable", func(t *testing.T) {
		dead := filepath.Join(t.TempDir(), "sacct")
		if err := os.WriteFile(dead, []byte("#!/bin/sh\necho 'sacct: error: Problem talking to the database: Connection refused' >&2\nexit 1\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		l, _ := sreportLedger(t, gpuacct, c, ids, dead)
		got := ledgerRuns(t, l)
		restart := map[uint64]int{}
		late := 0
		for _, r := range runs {
			k := fmt.Sprintf("%d+%d", r.id, restart[r.id])
			restart[r.id]++
			g, ok := got[k]
			if !ok {
				t.Errorf("run %s (%s) is not in the ledger", k, r.jobID)
				continue
			}
			if g.EndSource == "sacct" || g.Checked != 0 {
				t.Errorf("run %s (%s): end from %q, sacct_checked %d: want the hooks' times while sacct is unreachable", k, r.jobID, g.EndSource, g.Checked)
			}
			if strings.ToUpper(r.state) == "REQUEUED" || restart[r.id] > 1 {
				continue // a requeued job's runs: see the hooks' note in docs/accounting.md
			}
			// The hooks' own times: a start and an end no earlier than
			// Slurm's, flagged as the epilog's.
			if g.EndSource != "epilog" || g.Start < r.start || g.End < r.end || g.AllocGPUS != g.GPUs*(g.End-g.Start) {
				t.Errorf("run %s (%s): ledger %+v; want the hooks' times from %d to no earlier than %d, end_source epilog", k, r.jobID, g, r.start, r.end)
			}
			if r.user == sreportDelayed {
				// The epilog ran 1.5 s after Slurm's end: its whole
				// second is at least one later. (The GPU-seconds need
				// not be more: the prolog's start may be late too.)
				if g.End < r.end+1 {
					t.Errorf("run %s (%s) of the delayed epilog: ledger end %d, Slurm's %d: want at least a second later", k, r.jobID, g.End, r.end)
				}
				late++
			}

		}
		if late == 0 {
			t.Errorf("no run of %s, whose epilog was delayed", sreportDelayed)
		}
		if src := jobEndSources(t, l, ids[2]); !slices.Equal(src, []string{"epilog"}) {
			t.Errorf("gpuacct job %d --json: node end sources %q, want [epilog]", ids[2], src)
		}

	})
}

// addSreportAssociations adds the test's accounts and users (existing ones
// are kept: a second run adds nothing) and the local users the jobs run as.
func addSreportAssociations(t *testing.T, c *slurm.Cluster, st sreportTest) {
	t.Helper()
	for u := range st.users {
		slurm.EnsureUser(t, u)
	}
	// "Nothing new added" exits 1: what counts is the check below.
	run := func(args ...string) {
		out, err := c.Cmd(context.Background(), "", "sacctmgr", append([]string{"-i"}, args...)...).CombinedOutput()
		if err != nil && !strings.Contains(string(out), "Nothing new added") && !strings.Contains(string(out), "already exists") {
			t.Logf("sacctmgr %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("add", "account", strings.Join(st.accounts, ","), "cluster=testcl")
	for u, accts := range st.users {
		run("add", "user", u, "account="+strings.Join(accts, ","), "defaultaccount="+accts[0], "cluster=testcl")
	}
	have := c.Run(t, "", "sacctmgr", "-n", "-P", "show", "assoc", "where", "cluster=testcl", "format=user,account")
	for u, accts := range st.users {
		for _, a := range accts {
			if !slices.Contains(strings.Split(strings.TrimSpace(have), "\n"), u+"|"+a) {
				t.Fatalf("sacctmgr did not add %s to %s; associations:\n%s", u, a, have)
			}
		}
	}
}

// waitRan waits until the job has run for at least d (squeue's TimeUsed).
func waitRan(t *testing.T, c *slurm.Cluster, id uint64, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(2*time.Minute + d)
	for {
		out := strings.TrimSpace(c.Run(t, "", "squeue", "-h", "-j", strconv.FormatUint(id, 10), "-o", "%T %M"))
		state, used, _ := strings.Cut(out, " ")
		if state == "RUNNING" && squeueDuration(used) >= d {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d is %q, not running for %s", id, out, d)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// squeueDuration reads squeue's [[D-]H:]M:SS; what it cannot read is 0.
func squeueDuration(s string) time.Duration {
	var days int
	if d, rest, ok := strings.Cut(s, "-"); ok {
		days, _ = strconv.Atoi(d)
		s = rest
	}
	var total time.Duration
	for part := range strings.SplitSeq(s, ":") {
		v, err := strconv.Atoi(part)
		if err != nil {
			return 0
		}
		total = total*60 + time.Duration(v)
	}
	return time.Duration(days)*24*time.Hour + total*time.Second
}

// sacctRuns is every run of the jobs (-D: a requeued job's earlier runs
// too), each job's in Start order.
func sacctRuns(t *testing.T, c *slurm.Cluster, ids []uint64) []slurmRunRow {
	t.Helper()
	var runs []slurmRunRow
	for _, a := range c.SacctRuns(t, ids...) {
		if a.Start.IsZero() || a.End.IsZero() {
			t.Fatalf("sacct run of job %s without a start or an end: %+v", a.JobID, a)
		}
		runs = append(runs, slurmRunRow{id: a.JobIDRaw, jobID: a.JobID, user: a.User, acct: a.Account, gpus: int64(a.GPUs),
			elapsed: a.ElapsedRaw, start: a.Start.Unix(), end: a.End.Unix(), state: a.State, exit: a.ExitCode})
	}
	return runs
}

func sacctExit(t *testing.T, s string) int64 {
	t.Helper()
	code, _, _ := strings.Cut(s, ":")
	v, err := strconv.ParseInt(code, 10, 64)
	if err != nil {
		t.Fatalf("sacct exit code %q", s)
	}
	return v
}

// sreportLedger is a fresh ledger of the jobs' events (every run's),
// ingested by one pass with sacct as the sacct program, and the names of
// the files ingest quarantined.
func sreportLedger(t *testing.T, gpuacct string, c *slurm.Cluster, ids []uint64, sacct string) (*ledger, []string) {
	t.Helper()
	spool := c.Path("GPUSUITE_SLURM_SPOOL")
	// An array task's events are named by its own id: take the events of
	// every id sacct lists for the jobs.
	var files []string
	for _, r := range sacctRuns(t, c, ids) {
		names, _ := filepath.Glob(filepath.Join(spool, fmt.Sprintf("event.testcl.%d.*", r.id)))
		files = append(files, names...)
	}
	in := ingestLedger(t, gpuacct, c, files, ledgerConfig{Cluster: "testcl",
		Ingest: fmt.Sprintf("sacct = %q\nsacct_timeout = \"20s\"\n", sacct)})
	if len(in.Quarantined) > 0 {
		t.Logf("ingest quarantined %v\n%s", in.Quarantined, in.Log)
	}
	return in.ledger, in.Quarantined
}

// ledgerRun is what the test compares of a run in the ledger.
type ledgerRun struct {
	User, Account string
	GPUs          int64
	Start, End    int64
	AllocGPUS     int64
	State         string
	Exit          int64
	EndSource     string
	Checked       int64
}

// ledgerRuns reads the ledger's runs by "ID+RESTART".
func ledgerRuns(t *testing.T, l *ledger) map[string]ledgerRun {
	t.Helper()
	out := map[string]ledgerRun{}
	for _, row := range ledgerdb.Strings(t, l.db, `SELECT job_id, restart, user, account, gpus, start, end, alloc_gpu_s, state,
 coalesce(exit_code, -1), coalesce(end_source, ''), sacct_checked FROM jobs ORDER BY job_id, restart`) {
		f := strings.Split(row, "|")
		var r ledgerRun
		r.User, r.Account, r.State, r.EndSource = f[2], f[3], f[8], f[10]
		for i, p := range []*int64{&r.GPUs, &r.Start, &r.End, &r.AllocGPUS} {
			r2, err := strconv.ParseInt(f[4+i], 10, 64)
			if err != nil {
				t.Fatalf("ledger row %q: %v", row, err)
			}
			*p = r2
		}
		r.Exit, _ = strconv.ParseInt(f[9], 10, 64)
		r.Checked, _ = strconv.ParseInt(f[11], 10, 64)
		out[f[0]+"+"+f[1]] = r
	}
	return out
}

// sreportSeconds is sreport's allocated gres/gpu seconds of the test's
// accounts ("ACCOUNT") and their users ("ACCOUNT/USER") in [from, to).
func sreportSeconds(t *testing.T, c *slurm.Cluster, st sreportTest, from, to time.Time) map[string]int64 {
	t.Helper()
	const ts = "2006-01-02T15:04:05"
	out := rolledUp(t, c, from, to, func(out string) bool { // some GPU-seconds
		for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
			if f := strings.Split(line, "|"); len(f) == 6 && f[5] != "0" {
				return true
			}
		}
		return false
	},
		"-t", "seconds", "-T", "gres/gpu", "-P", "-n", "cluster", "AccountUtilizationByUser",
		"cluster=testcl", "accounts="+strings.Join(st.accounts, ","), "start="+from.Local().Format(ts), "end="+to.Local().Format(ts))
	got := map[string]int64{}
	for line := range strings.SplitSeq(strings.TrimSpace(out), "\n") {
		// Cluster|Account|Login|Proper Name|TRES Name|Used
		f := strings.Split(line, "|")
		if len(f) != 6 || f[4] != "gres/gpu" {
			t.Fatalf("sreport line %q: want Cluster|Account|Login|Proper Name|TRES Name|Used\n%s", line, out)
		}
		v, err := strconv.ParseInt(f[5], 10, 64)
		if err != nil {
			t.Fatalf("sreport line %q: %v", line, err)
		}
		k := f[1]
		if f[2] != "" {
			k += "/" + f[2]
		}
		if v != 0 {
			got[k] = v
		}
	}
	if len(got) == 0 {
		t.Fatalf("sreport lists no GPU-seconds for %v after the rollup:\n%s", st.accounts, out)
	}
	return got
}

// rolledUp asks slurmdbd to roll up [from, to) and runs sreport with args
// until done says its output holds what the test needs, within a minute:
// under load slurmdbd can still be rolling up when sacctmgr returns, and
// sreport then prints nothing yet.
func rolledUp(t *testing.T, c *slurm.Cluster, from, to time.Time, done func(string) bool, args ...string) string {
	t.Helper()
	const ts = "2006-01-02T15:04:05"
	deadline := time.Now().Add(time.Minute)
	for {
		c.Run(t, "", "sacctmgr", "-i", "rollup", from.Local().Format(ts), to.Local().Format(ts))
		out := c.Run(t, "", "sreport", args...)
		if done(out) || time.Now().After(deadline) {
			return out
		}
		time.Sleep(time.Second)
	}
}

// gpuacctSeconds is gpuacct's allocated GPU-seconds of the test's accounts
// and their users in [from, to), keyed as sreportSeconds: report accounts
// and report users -A, in JSON (GPU-hours × 3600, rounded).
func gpuacctSeconds(t *testing.T, l *ledger, st sreportTest, from, to time.Time) map[string]int64 {
	t.Helper()
	const ts = "2006-01-02T15:04:05"
	window := []string{"--format", "json", "--tz", "UTC", "--start", from.Format(ts), "--end", to.Format(ts)}
	got := map[string]int64{}
	read := func(args []string, key func(map[string]any) string) {
		out, _ := l.run(t, append(append([]string{"report"}, args...), window...)...)
		var rep struct {
			Rows []map[string]any `json:"rows"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("gpuacct report %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		for _, r := range rep.Rows {
			h, ok := r["alloc_gpu_hours"].(float64)
			if !ok {
				t.Fatalf("gpuacct report %s: row without alloc_gpu_hours: %v", strings.Join(args, " "), r)
			}
			if s := int64(math.Round(h * 3600)); s != 0 {
				got[key(r)] = s
			}
		}
	}
	read([]string{"accounts", "-A", strings.Join(st.accounts, ",")}, func(r map[string]any) string { return fmt.Sprint(r["account"]) })
	for _, a := range st.accounts {
		read([]string{"users", "-A", a}, func(r map[string]any) string { return a + "/" + fmt.Sprint(r["user"]) })
	}
	return got
}

// jobEndSources is each node part's end_source as `gpuacct job --json`
// shows the job.
func jobEndSources(t *testing.T, l *ledger, id uint64) []string {
	t.Helper()
	out, _ := l.run(t, "job", strconv.FormatUint(id, 10), "--json")
	var j struct {
		Parts []struct {
			EndSource string `json:"end_source"`
		} `json:"node_parts"`
	}
	if err := json.NewDecoder(bytes.NewReader([]byte(out))).Decode(&j); err != nil {
		t.Fatalf("gpuacct job %d --json: %v\n%s", id, err, out)
	}
	var src []string
	for _, p := range j.Parts {
		src = append(src, p.EndSource)
	}
	return src
}
