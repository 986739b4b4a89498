package reportcmd

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// jobsLedger is a ledger of runs with and without sacct's usage: an
// array job of three tasks, a run of a site without a gather plugin, a
// run sacct has not answered for.
func jobsLedger(t *testing.T, now time.Time) string {
	t.Helper()
	task := func(n int64) *int64 { return &n }
	path := buildLedger(t, []fxJob{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: t0, End: t0 + 5400},
		{ID: 8, User: "bob", Acct: "nlp", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0, End: t0 + 1200},
		{ID: 9, User: "carol", Acct: "nlp", Part: "debug", Node: "gpu02", GPUs: 1, Start: t0 + 3600, End: t0 + 7200},
		{ID: 20, ArrayJob: 20, Task: task(0), User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0 + 600, End: t0 + 1800},
		{ID: 21, ArrayJob: 20, Task: task(1), User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0 + 600, End: t0 + 3000},
		{ID: 22, ArrayJob: 20, Task: task(2), User: "alice", Acct: "vision", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0 + 600, End: t0 + 4200},
	}, now)
	const gib = 1 << 30
	u := func(cpus, elapsed, limit, reqMem, cpuS, rss int64) store.Resources {
		return store.Resources{AllocCPUs: cpus, Nodes: 1, Elapsed: time.Duration(elapsed) * time.Second, TimeLimit: store.Known(limit),
			ReqMem: store.Known(reqMem), TotalCPU: store.Known(cpuS * 1000), MaxRSS: store.Known(rss)}
	}
	seedResources(t, path, now, map[int64]store.Resources{
		7: u(4, 5400, 4*3600, 16*gib, 5400, 79*gib/10),
		// jobacct_gather/none: no CPU time, no RSS.
		8:  {AllocCPUs: 2, Nodes: 1, Elapsed: 1200 * time.Second, TimeLimit: store.Known(3600), ReqMem: store.Known(4 * gib)},
		20: u(1, 1200, 3600, 2*gib, 1100, gib),
		21: u(1, 2400, 3600, 2*gib, 300, gib/2),
		22: u(1, 3600, 3600, 2*gib, 3500, 19*gib/10),
	})
	// Job 7's GPUs' memory peaks as an agent's aggregate gives them.
	ledgerdb.Exec(t, path, `UPDATE job_gpus SET mem_max_mib = 20480 + 10240 * (gpu_id % 2), mem_total_mib = 81920
 WHERE job = (SELECT id FROM jobs WHERE job_id = 7)`)
	return path
}

// TestJobs: gpuacct jobs lists runs with seff's shares, a TOTAL and how
// many more matched, in text, CSV and JSON (golden files, testdata/jobs,
// -update), filtered by user (me), state, array and date, sorted.
func TestJobs(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := jobsLedger(t, now)
	for _, tt := range []struct {
		name string
		args []string
	}{
		{"all.txt", nil},
		{"all.csv", []string{"--format", "csv"}},
		{"all.json", []string{"--format", "json"}},
		{"me-sort-cpu.txt", []string{"--user", "me", "--sort", "cpu"}},
		{"array.txt", []string{"--array", "20", "--sort", "mem"}},
		{"state-limit.txt", []string{"--state", "COMPLETED", "--limit", "2", "--sort", "time"}},
		{"since.txt", []string{"--since", "2026-01-01T01:00", "--until", "2026-01-01T01:30"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, out, _ := testDeps(now, nil)
			d.Caller = func() (string, error) { return "alice", nil }
			if err := run(t, d, append([]string{"jobs", dbOpt(path), "--tz", "UTC", "--since", "7d"}, tt.args...)...); err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "jobs", tt.name), out.String())
		})
	}
}

// TestJobsBadInput: what gpuacct jobs cannot answer is one line and a
// usage exit.
func TestJobsBadInput(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := jobsLedger(t, now)
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown state", []string{"--state", "done"}, `jobs: --state "done" is not one of running, completed`},
		{"bad date", []string{"--since", "2026-02-30"}, `jobs: --since: time "2026-02-30" is not a real date and time`},
		{"bad date format", []string{"--until", "next week"}, `jobs: --until: time "next week" is not one of`},
		{"until before since", []string{"--since", "2026-01-05", "--until", "2026-01-01"}, "jobs: --until 2026-01-01T00:00:00 is not after --since"},
		{"array of a plain job", []string{"--array", "7"}, "jobs: --array 7: job 7 is not an array job"},
		{"array unknown", []string{"--array", "99"}, "jobs: --array 99: no array job 99"},
		{"array not a number", []string{"--array", "20_1"}, `jobs: --array "20_1" is not an array job id`},
		{"bad sort", []string{"--sort", "energy"}, `jobs: --sort "energy" is not start, elapsed`},
		{"bad limit", []string{"--limit", "0"}, "jobs: --limit 0 is not from 1 to 10000"},
		{"unknown user", []string{"--user", "zed"}, `--users: no user "zed"`},
		{"argument", []string{"7"}, `jobs: unexpected argument "7"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d, out, _ := testDeps(now, nil)
			err := run(t, d, append([]string{"jobs", dbOpt(path), "--tz", "UTC"}, tt.args...)...)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q (output %q)", err, tt.want, out.String())
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
			if code := exitCode(err); code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
		})
	}
}

// TestJobsColour: on a terminal a run that used under half of something
// it asked for is yellow, under a quarter red, the others and the TOTAL
// plain; a pipe, NO_COLOR and the machine formats get no colour.
func TestJobsColour(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := jobsLedger(t, now)
	jobs := func(width int, env map[string]string, args ...string) string {
		t.Helper()
		d, out, _ := testDeps(now, env)
		d.Width = func() int { return width }
		if err := run(t, d, append([]string{"jobs", dbOpt(path), "--tz", "UTC", "--since", "7d"}, args...)...); err != nil {
			t.Fatal(err)
		}
		return out.String()
	}
	t.Run("terminal", func(t *testing.T) {
		want := map[string]string{"9": "", "20_2": "", "20_1": "\x1b[31m", "20": "\x1b[33m", "8": "\x1b[33m", "7": "\x1b[33m", "TOTAL": ""}
		got := map[string]string{}
		for _, l := range strings.Split(jobs(200, nil), "\n") {
			colour, rest := "", l
			if strings.HasPrefix(l, "\x1b[") {
				colour, rest, _ = strings.Cut(l, "m")
				colour += "m"
				if !strings.HasSuffix(rest, "\x1b[0m") {
					t.Errorf("line %q: colour not reset at its end", l)
				}
			}
			if f := strings.Fields(rest); len(f) > 0 {
				if _, ok := want[f[0]]; ok {
					got[f[0]] = colour
				}
			}
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("colours by run (-want +got):\n%s", diff)
		}
	})
	plainText := jobs(0, nil)
	for _, tt := range []struct {
		name  string
		width int
		env   map[string]string
		args  []string
	}{
		{"pipe", 0, nil, nil},
		{"NO_COLOR", 200, map[string]string{"NO_COLOR": "1"}, nil},
		{"csv", 200, nil, []string{"--format", "csv"}},
		{"json", 200, nil, []string{"--format", "json"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if out := jobs(tt.width, tt.env, tt.args...); strings.Contains(out, "\x1b[") {
				t.Errorf("colour in %s output:\n%q", tt.name, out)
			}
		})
	}
	if !strings.Contains(plainText, "20_1 ") {
		t.Errorf("plain output lacks run 20_1:\n%s", plainText)
	}
}
