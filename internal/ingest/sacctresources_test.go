package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// sacctResourcesOut is a real answer of Slurm 22.05 with
// jobacct_gather/linux (test/slurm's harness) to `sacct -D --parsable2
// --noheader -o` sacctResourceFields: a job burning a core of 4 with a
// batch step and a step 0, one of a time limit of a day, one that failed
// at once (no step was sampled), an array's two tasks (raw ids 5 and 2,
// --mem-per-cpu=300M × 2 CPUs: ReqMem is the total).
const sacctResourcesOut = `1|2026-11-28T09:02:47|2026-11-28T09:02:58|COMPLETED|0:0|4|00:03.766|1000M||2|11|1
1.batch|2026-11-28T09:02:47|2026-11-28T09:02:58|COMPLETED|0:0|4|00:03.497||219796K||11|1
1.0|2026-11-28T09:02:55|2026-11-28T09:02:58|COMPLETED|0:0|4|00:00.268||218200K||3|1
3|2026-11-28T09:09:24|2026-11-28T09:09:25|COMPLETED|0:0|1|00:00.003|2G||1440|1|1
3.batch|2026-11-28T09:09:24|2026-11-28T09:09:25|COMPLETED|0:0|1|00:00.003||3124K||1|1
4|2026-11-28T09:09:24|2026-11-28T09:09:24|FAILED|3:0|1|00:00.001|4000M||UNLIMITED|0|1
4.batch|2026-11-28T09:09:24|2026-11-28T09:09:24|FAILED|3:0|1|00:00.001||||0|1
5|2026-11-28T09:09:24|2026-11-28T09:09:28|COMPLETED|0:0|2|00:00.307|600M||UNLIMITED|4|1
5.batch|2026-11-28T09:09:24|2026-11-28T09:09:28|COMPLETED|0:0|2|00:00.012||10712K||4|1
5.0|2026-11-28T09:09:24|2026-11-28T09:09:28|COMPLETED|0:0|2|00:00.294||218224K||4|1
2|2026-11-28T09:09:24|2026-11-28T09:09:28|COMPLETED|0:0|2|00:00.293|600M||UNLIMITED|4|1
2.batch|2026-11-28T09:09:24|2026-11-28T09:09:28|COMPLETED|0:0|2|00:00.012||10792K||4|1
2.0|2026-11-28T09:09:24|2026-11-28T09:09:28|COMPLETED|0:0|2|00:00.280||218192K||4|1
`

// TestParseSacctResources: each run takes its own line's CPUs, elapsed, time
// limit, requested memory (bytes per node) and TotalCPU, and the highest
// MaxRSS of the steps listed after it; a run whose steps report no RSS
// (jobacct_gather/none, or a job over before its first sample) has its
// CPU time and RSS not recorded, never 0.
func TestParseSacctResources(t *testing.T) {
	const m, k = 1 << 20, 1 << 10
	tests := []struct {
		name string
		out  string
		want map[uint64][]store.Resources
	}{
		{"gather linux, real", sacctResourcesOut, map[uint64][]store.Resources{
			1: {{AllocCPUs: 4, Nodes: 1, Elapsed: 11 * time.Second, TimeLimit: store.Known(120), ReqMem: store.Known(1000 * m), TotalCPU: store.Known(3766), MaxRSS: store.Known(219796 * k)}},
			3: {{AllocCPUs: 1, Nodes: 1, Elapsed: time.Second, TimeLimit: store.Known(86400), ReqMem: store.Known(2 << 30), TotalCPU: store.Known(3), MaxRSS: store.Known(3124 * k)}},
			4: {{AllocCPUs: 1, Nodes: 1, ReqMem: store.Known(4000 * m)}},
			5: {{AllocCPUs: 2, Nodes: 1, Elapsed: 4 * time.Second, ReqMem: store.Known(600 * m), TotalCPU: store.Known(307), MaxRSS: store.Known(218224 * k)}},
			2: {{AllocCPUs: 2, Nodes: 1, Elapsed: 4 * time.Second, ReqMem: store.Known(600 * m), TotalCPU: store.Known(293), MaxRSS: store.Known(218192 * k)}},
		}},
		// Real, from the harness run with jobacct_gather/none: a step
		// that burnt a core for 3 s reads TotalCPU 00:00:00.
		{"gather none: steps report nothing",
			"35|2026-11-28T09:24:02|2026-11-28T09:24:05|COMPLETED|0:0|2|00:00:00|512M||1|3|1\n" +
				"35.batch|2026-11-28T09:24:02|2026-11-28T09:24:05|COMPLETED|0:0|2|00:00:00||||3|1\n" +
				"35.0|2026-11-28T09:24:02|2026-11-28T09:24:05|COMPLETED|0:0|2|00:00:00||||3|1\n",
			map[uint64][]store.Resources{35: {{AllocCPUs: 2, Nodes: 1, Elapsed: 3 * time.Second, TimeLimit: store.Known(60), ReqMem: store.Known(512 * m)}}}},
		{"steps reporting 0, over two nodes",
			"7|2026-03-02T00:00:00|2026-03-02T01:00:00|COMPLETED|0:0|8|00:00:00|16G||60|3600|2\n" +
				"7.batch|2026-03-02T00:00:00|2026-03-02T01:00:00|COMPLETED|0:0|4|00:00:00||0||3600|1\n" +
				"7.extern|2026-03-02T00:00:00|2026-03-02T01:00:00|COMPLETED|0:0|8|00:00:00||0||3600|2\n",
			map[uint64][]store.Resources{7: {{AllocCPUs: 8, Nodes: 2, Elapsed: time.Hour, TimeLimit: store.Known(3600), ReqMem: store.Known(8 << 30)}}}},
		{"requeued: each run its own steps; older Slurm's per CPU and per node",
			"9|2026-03-02T01:00:00|2026-03-02T03:00:00|COMPLETED|0:0|4|1-02:03:04|4000Mc||180|7200|2\n" +
				"9.batch|2026-03-02T01:00:00|2026-03-02T03:00:00|COMPLETED|0:0|2|1-02:03:04||1.50G||7200|1\n" +
				"9|2026-03-02T00:00:00|2026-03-02T00:30:00|REQUEUED|0:0|4|10:00.5|4000Mn||UNLIMITED|1800|2\n" +
				"9.batch|2026-03-02T00:00:00|2026-03-02T00:30:00|CANCELLED|0:15|2|10:00.5||2T||1800|1\n" +
				"9.0|2026-03-02T00:00:00|2026-03-02T00:30:00|CANCELLED|0:15|2|00:00:00||512M||1800|1\n",
			map[uint64][]store.Resources{9: {
				{AllocCPUs: 4, Nodes: 2, Elapsed: 30 * time.Minute, ReqMem: store.Known(4000 * m), TotalCPU: store.Known(600_500), MaxRSS: store.Known(2 << 40)},
				{AllocCPUs: 4, Nodes: 2, Elapsed: 2 * time.Hour, TimeLimit: store.Known(3 * 3600), ReqMem: store.Known(2 * 4000 * m), TotalCPU: store.Known((26*3600 + 3*60 + 4) * 1000), MaxRSS: store.Known(3 << 29)},
			}}},
		{"steps of a line that did not parse, or of another job, count for none",
			"11|yesterday|Unknown|RUNNING|0:0|1|00:00:00|1G||1|1|1\n" +
				"11.batch|2026-03-02T00:00:00|Unknown|RUNNING|0:0|1|00:01.000||5M||1|1\n" +
				"12|2026-03-02T00:00:00|2026-03-02T00:01:00|COMPLETED|0:0|1|00:01.000|1G||1|60|1\n" +
				"13.batch|2026-03-02T00:00:00|2026-03-02T00:01:00|COMPLETED|0:0|1|00:01.000||5M||60|1\n",
			map[uint64][]store.Resources{12: {{AllocCPUs: 1, Nodes: 1, Elapsed: time.Minute, TimeLimit: store.Known(60), ReqMem: store.Known(1 << 30)}}}},
		{"no resource fields, or ones that do not parse: times only",
			"14|2026-03-02T00:00:00|2026-03-02T00:01:00|COMPLETED|0:0\n" +
				"15|2026-03-02T00:00:00|2026-03-02T00:01:00|COMPLETED|0:0|x|00:00:00|1G||1|60|1\n" +
				"15.batch|2026-03-02T00:00:00|2026-03-02T00:01:00|COMPLETED|0:0|1|00:01.000||5M||60|1\n",
			map[uint64][]store.Resources{14: {{}}, 15: {{}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[uint64][]store.Resources{}
			for id, runs := range parseSacctRunsOf(tc.out, time.UTC) {
				for _, r := range runs {
					u, _ := r.resources.resources()
					got[id] = append(got[id], u)
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("resources (-want +got):\n%s", d)
			}
		})
	}
}

func TestSacctCPUTime(t *testing.T) {
	tests := []struct {
		in   string
		ms   int64
		good bool
	}{
		{"00:03.766", 3766, true},
		{"00:00:00", 0, true},
		{"01:02:03", 3723000, true},
		{"1-02:03:04", 93784000, true},
		{"12:34.5", 754500, true},
		{"59:59.999", 3599999, true},
		{"", 0, false},
		{"Unknown", 0, false},
		{"00:61", 0, false},
		{"1:2:3:4", 0, false},
		{"00:01.1234", 0, false},
		{"-1:00", 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			ms, ok := sacctCPUTime(tc.in)
			if ms != tc.ms || ok != tc.good {
				t.Errorf("sacctCPUTime(%q) = %d, %v; want %d, %v", tc.in, ms, ok, tc.ms, tc.good)
			}
		})
	}
}

func TestSacctBytes(t *testing.T) {
	tests := []struct {
		in   string
		unit byte
		b    int64
		good bool
	}{
		{"219796K", 'K', 219796 << 10, true},
		{"1000M", 'M', 1000 << 20, true},
		{"2G", 'M', 2 << 30, true},
		{"1.50G", 'K', 3 << 29, true},
		{"2T", 'K', 2 << 40, true},
		{"0", 'K', 0, true},
		{"4096", 'K', 4096 << 10, true},
		{"", 'K', 0, false},
		{"12X", 'K', 0, false},
		{"-5M", 'K', 0, false},
		{"G", 'K', 0, false},
		{"99999999P", 'K', 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			b, ok := sacctBytes(tc.in, tc.unit)
			if b != tc.b || ok != tc.good {
				t.Errorf("sacctBytes(%q) = %d, %v; want %d, %v", tc.in, b, ok, tc.b, tc.good)
			}
		})
	}
}

func TestReqMemPerNode(t *testing.T) {
	tests := []struct {
		in          string
		cpus, nodes int64
		want        store.Figure
	}{
		{"16G", 8, 2, store.Known(8 << 30)},
		{"4000Mn", 8, 2, store.Known(4000 << 20)},
		{"1000Mc", 8, 2, store.Known(4000 << 20)},
		{"0", 1, 1, store.Figure{}},
		{"0n", 1, 1, store.Figure{}},
		{"", 1, 1, store.Figure{}},
		{"1G", 1, 0, store.Figure{}},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			if got := reqMemPerNode(tc.in, tc.cpus, tc.nodes); got != tc.want {
				t.Errorf("reqMemPerNode(%q, %d, %d) = %+v, want %+v", tc.in, tc.cpus, tc.nodes, got, tc.want)
			}
		})
	}
}

// resourceFigures is what the test reads of each run's resources: id, restart,
// CPUs, nodes, elapsed, limit, memory asked, CPU ms, RSS (-1: NULL).
func resourceFigures(t *testing.T, s *store.Ledger) []string {
	t.Helper()
	return ledgerdb.Strings(t, s.Path, `SELECT j.job_id, j.restart, u.alloc_cpus, u.nodes, u.elapsed_s, coalesce(u.time_limit_s, -1), coalesce(u.req_mem, -1),
 coalesce(u.total_cpu_ms, -1), coalesce(u.max_rss, -1) FROM job_resources u JOIN jobs j ON j.id = u.job ORDER BY j.job_id, j.restart`)
}

// TestReconcileResources: the reconciling call asks for the runs' resources with
// their steps (no -X) and each run keeps its own, a run whose steps
// report no RSS with CPU time and RSS NULL. A call that fails fast (an
// answer over the output bound, a sacct without a resource field) is asked
// again for the times alone: the times are taken, the resources not; a call
// out of time is not asked again.
func TestReconcileResources(t *testing.T) {
	s0 := t0.Add(time.Minute)
	ts := func(d time.Duration) string { return s0.Add(d).Format(sacctTS) }
	records := []slurmRun{
		{id: 101, start: ts(0), end: ts(10 * time.Minute), state: "COMPLETED", exit: "0:0",
			resources: "4|02:30.000|8G||20|600|1", steps: [][2]string{{"batch", "1024K"}, {"0", "3G"}, {"extern", ""}}},
		{id: 102, start: ts(0), end: ts(20 * time.Minute), state: "FAILED", exit: "3:0",
			resources: "2|00:00:00|0||UNLIMITED|1200|1", steps: [][2]string{{"batch", ""}}},
		{id: 103, start: ts(0), end: ts(5 * time.Minute), state: "REQUEUED", exit: "0:0",
			resources: "1|04:00.000|1G||10|300|1", steps: [][2]string{{"batch", "100M"}}},
		{id: 103, start: ts(6 * time.Minute), end: ts(15 * time.Minute), state: "COMPLETED", exit: "0:0",
			resources: "1|01:00.000|1G||10|540|1", steps: [][2]string{{"batch", "200M"}}},
	}
	timed := []string{"101|0|1", "102|0|1", "103|0|1", "103|1|1"}
	untimed := []string{"101|0|0", "102|0|0", "103|0|0", "103|1|0"}
	tests := []struct {
		name      string
		fail      error // the resources call fails so
		calls     []string
		times     []string // job_id|restart|sacct_checked
		resources []string
	}{
		{"answered", nil, []string{sacctResourceFields}, timed, []string{
			"101|0|4|1|600|1200|8589934592|150000|3221225472",
			"102|0|2|1|1200|-1|-1|-1|-1",
			"103|0|1|1|300|600|1073741824|240000|104857600",
			"103|1|1|1|540|600|1073741824|60000|209715200",
		}},
		{"too large: times alone", errors.New("sacct -M c1 -j 103,102,101 -D: printed more than 67108864 bytes"),
			[]string{sacctResourceFields, sacctRunFields}, timed, nil},
		{"out of time: not asked again", fmt.Errorf("sacct: no answer in time: %w", context.DeadlineExceeded),
			[]string{sacctResourceFields}, untimed, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open(t)
			hookLateRuns(t, e, s0)
			recs := records
			var all, calls []string
			answer := fakeSacct(&recs, &all)
			var phase reconcilePhase
			now := s0.Add(time.Hour)
			deps := Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), SacctLocation: time.UTC}
			deps.Sacct = func(ctx context.Context, args ...string) ([]byte, error) {
				if phase.reconciling(args) {
					fields := args[len(args)-1]
					calls = append(calls, fields)
					if tc.fail != nil && fields == sacctResourceFields {
						return nil, tc.fail
					}
				}
				return answer(ctx, args...)
			}
			if _, err := New(deps).Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.calls, calls); d != "" {
				t.Errorf("reconciling calls' fields (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.times, ledgerdb.Strings(t, s.Path, `SELECT job_id, restart, sacct_checked FROM jobs ORDER BY job_id, restart`)); d != "" {
				t.Errorf("runs (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.resources, resourceFigures(t, s)); d != "" {
				t.Errorf("resources (-want +got):\n%s", d)
			}
		})
	}
}

// hookLateRuns puts the hooks' events, each come late, of the runs the
// reconciling tests ask sacct about: job 101 (10 minutes from s0), 102
// (20 minutes) and 103's two runs (5 minutes, then 6 to 15), on GPUs 0, 1
// and 2.
func hookLateRuns(t *testing.T, e *env, s0 time.Time) {
	t.Helper()
	hookLate(t, e, 101, 0, s0, s0.Add(10*time.Minute), 0)
	hookLate(t, e, 102, 0, s0, s0.Add(20*time.Minute), 1)
	hookLate(t, e, 103, 0, s0, s0.Add(5*time.Minute), 2)
	hookLate(t, e, 103, 1, s0.Add(6*time.Minute), s0.Add(15*time.Minute), 2)
}
