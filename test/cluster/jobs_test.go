package cluster_test

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// workload is one job the test submits: what its team asked for.
type workload struct {
	user, account string
	nodes, gpus   int // gpus on each node
	seconds       int
}

// TestJobsAcrossServers: a job on two servers (--nodes=2 --gres=gpu:4)
// and a burst of jobs of three teams spread over all three servers (gpu3's
// clock 4 s ahead) run at once. Once serve has ingested every server's
// records and taken Slurm's times, each run's GPU-seconds, per node and in
// all, and its nodes equal sacct's; each team's GPU-hours (gpuacct report
// accounts and the dashboard's API) equal the workload's ground truth: the
// GPUs each job asked for × the time Slurm ran it. Nothing is quarantined.
func TestJobsAcrossServers(t *testing.T) {
	m := get(t)
	jobs := []workload{
		{"alice", "team-a", 2, 4, 4}, // the two-server job
		{"alice", "team-a", 1, 1, 2}, {"alice", "team-a", 1, 2, 3},
		{"bob", "team-b", 1, 3, 2}, {"bob", "team-b", 1, 1, 4}, {"bob", "team-b", 1, 2, 1},
		{"carol", "team-c", 1, 4, 2}, {"carol", "team-c", 1, 1, 3}, {"carol", "team-c", 1, 2, 2},
		{"alice", "team-a", 1, 1, 1}, {"bob", "team-b", 1, 4, 3}, {"carol", "team-c", 1, 3, 1},
	}
	start := time.Now()
	ids := make([]uint64, len(jobs))
	for i, w := range jobs {
		wrap := fmt.Sprintf("sleep %d", w.seconds)
		if w.nodes > 1 {
			wrap = "srun " + wrap
		}
		ids[i] = m.Sbatch(t, w.user, "-A", w.account, fmt.Sprintf("--nodes=%d", w.nodes), fmt.Sprintf("--gres=gpu:%d", w.gpus),
			"--time=5", "--wrap", wrap)
	}
	m.WaitAccounted(t, 5*time.Minute, len(ids), ids...)
	m.waitReconciled(t, 3*time.Minute, ids...)

	// The ground truth: GPUs asked × nodes × Slurm's elapsed, by team;
	// every server ran some of it.
	truth := map[string]int64{}
	ran := map[string]bool{}
	for _, r := range m.sacctRuns(t, ids) {
		if r.state != "COMPLETED" {
			t.Errorf("job %d ended %s, not COMPLETED", r.id, r.state)
		}
		for i, id := range ids {
			if id == r.id {
				truth[jobs[i].account] += int64(jobs[i].gpus*jobs[i].nodes) * r.elapsed
				if got := r.gpus; got != int64(jobs[i].gpus*jobs[i].nodes) {
					t.Errorf("job %d: sacct's gres/gpu=%d, the job asked %d × %d", id, got, jobs[i].nodes, jobs[i].gpus)
				}
			}
		}
		for _, n := range r.nodes {
			ran[n] = true
		}
		if r.id == ids[0] && len(r.nodes) != 2 {
			t.Errorf("the two-server job ran on %v", r.nodes)
		}
	}
	for _, n := range m.nodes {
		if !ran[n] {
			t.Logf("server %s ran none of the burst (Slurm packed it elsewhere)", n)
		}
	}
	t.Logf("%d jobs on servers %v; GPU-seconds by team: %v", len(ids), ran, truth)
	got := m.compareWithSacct(t, ids)
	if d := cmp.Diff(truth, got); d != "" {
		t.Errorf("ledger GPU-seconds by team differ from the workload's (-truth +ledger):\n%s", d)
	}

	// Reports over whole hours from the ledger's first job to past the
	// burst, so that every job of the cluster counts whole.
	const ts = "2006-01-02T15:04:05"
	var first int64
	for _, row := range m.ledgerRows(t, `SELECT coalesce(min(start), 0) FROM jobs WHERE cluster = 'gsc'`) {
		fmt.Sscan(row, &first)
	}
	from := time.Unix(first, 0).UTC().Truncate(time.Hour)
	if from.After(start) || first == 0 {
		t.Fatalf("the ledger's first job starts at %d, after the burst was submitted (%s)", first, start.Format(ts))
	}
	to := time.Now().Add(time.Hour).UTC().Truncate(time.Hour)
	all := m.teamSecondsSince(t, from, to)
	for team, secs := range truth {
		if all[team] < secs {
			t.Errorf("report accounts: %s %d GPU-seconds, the burst alone is %d", team, all[team], secs)
		}
	}
	// The burst's share: the report's figure less what earlier tests of
	// this package ran in the same hours.
	before := m.ledgerSecondsBefore(t, ids)
	for team, secs := range truth {
		if got := all[team] - before[team]; got != secs {
			t.Errorf("report accounts over %s – %s: %s has %d GPU-seconds besides earlier jobs, the workload %d",
				from.Format(ts), to.Format(ts), team, got, secs)
		}
	}
	var api struct {
		Rows []map[string]any `json:"rows"`
	}
	m.getJSON(t, "/api/v1/report/accounts?tz=UTC&start="+from.Format(ts)+"&end="+to.Format(ts), &api)
	for _, r := range api.Rows {
		team := fmt.Sprint(r["account"])
		h, _ := r["alloc_gpu_hours"].(float64)
		if want, ok := all[team]; ok && int64(math.Round(h*3600)) != want {
			t.Errorf("dashboard API: %s %.6f GPU-hours (%d s), report accounts %d s", team, h, int64(math.Round(h*3600)), want)
		}
	}
	if q := m.quarantined(t); len(q) > 0 {
		t.Errorf("ingest quarantined:\n%s", strings.Join(q, "\n"))
	}
}

// teamSecondsSince is `gpuacct report accounts` over [from, to) in UTC,
// as GPU-seconds by account.
func (m *cl) teamSecondsSince(t *testing.T, from, to time.Time) map[string]int64 {
	t.Helper()
	const ts = "2006-01-02T15:04:05"
	out := m.gpuacctRun(t, "report", "accounts", "--format", "json", "--tz", "UTC", "--start", from.Format(ts), "--end", to.Format(ts))
	var rep struct {
		Rows []map[string]any `json:"rows"`
	}
	decode(t, out, &rep)
	got := map[string]int64{}
	for _, r := range rep.Rows {
		h, ok := r["alloc_gpu_hours"].(float64)
		if !ok {
			t.Fatalf("report accounts: row without alloc_gpu_hours: %v", r)
		}
		got[fmt.Sprint(r["account"])] = int64(math.Round(h * 3600))
	}
	return got
}

// ledgerSecondsBefore is the ledger's GPU-seconds by account of the jobs
// other than ids: what earlier tests ran.
func (m *cl) ledgerSecondsBefore(t *testing.T, ids []uint64) map[string]int64 {
	t.Helper()
	mine := map[string]bool{}
	for _, id := range ids {
		mine[fmt.Sprint(id)] = true
	}
	out := map[string]int64{}
	for _, row := range m.ledgerRows(t, `SELECT job_id, account, alloc_gpu_s FROM jobs WHERE cluster = 'gsc'`) {
		f := strings.Split(row, "|")
		if mine[f[0]] {
			continue
		}
		var v int64
		fmt.Sscan(f[2], &v)
		out[f[1]] += v
	}
	return out
}
