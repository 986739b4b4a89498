package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// runsCall says whether a fake sacct's args ask about job runs: the
// reconciling batches, and the jobs without a start or unfinished.
func runsCall(args []string) bool {
	a := strings.Join(args, " ")
	return strings.HasSuffix(a, "-o "+sacctRunFields) || strings.HasSuffix(a, "-o "+sacctResourceFields)
}

// reconcilePhase tells reconcileTimes' calls from those about jobs without
// a start or unfinished, which ask the same: a pass asks about those
// first, then about job details, then reconciles. Reset it (zero) before
// each pass.
type reconcilePhase struct{ on bool }

// reconciling says whether args are a reconciling call.
func (p *reconcilePhase) reconciling(args []string) bool {
	if strings.HasSuffix(strings.Join(args, " "), "-o JobIDRaw,JobID,QOS,Comment") {
		p.on = true
	}
	return p.on && runsCall(args)
}

const sacctTS = "2006-01-02T15:04:05"

// hookLate is how far the test's prolog and epilog run after Slurm's
// start and end: 1 s and 2 s, as a busy node's do.
func hookLate(t *testing.T, e *env, job uint64, restart int, start, end time.Time, idx ...int) {
	t.Helper()
	e.put(t, evFile(t, "gpu001", job, restart, record.JobStart, start.Add(time.Second), idx...),
		evFile(t, "gpu001", job, restart, record.JobEnd, end.Add(2*time.Second), idx...))
}

// jobFigures is what the test reads of each run: id, restart, GPUs,
// start, end, allocated GPU-s, state, exit code, end source, sacct_checked.
func jobFigures(t *testing.T, s *store.Ledger) []string {
	t.Helper()
	rows := ledgerdb.Strings(t, s.Path, `SELECT job_id, restart, gpus, start, end, alloc_gpu_s, state, coalesce(exit_code, -1), coalesce(end_source, ''), sacct_checked FROM jobs ORDER BY job_id, restart`)
	return rows
}

// TestReconcileTimes: finished runs whose hooks ran late take Slurm's
// times in one batched sacct call a pass: allocated GPU-s equal
// gres/gpu × ElapsedRaw, a requeued job's runs each their own; a second
// pass asks nothing and moves nothing. Without sacct, or while it cannot
// be reached, the hooks' times stay and end_source says so; a run sacct
// does not know is asked again until a day after its end.
func TestReconcileTimes(t *testing.T) {
	s0 := t0.Add(time.Minute)
	records := []slurmRun{
		{id: 101, start: s0.Format(sacctTS), end: s0.Add(10 * time.Minute).Format(sacctTS), state: "COMPLETED", exit: "0:0"},
		{id: 102, start: s0.Format(sacctTS), end: s0.Add(20 * time.Minute).Format(sacctTS), state: "FAILED", exit: "3:0"},
		{id: 103, start: s0.Format(sacctTS), end: s0.Add(5 * time.Minute).Format(sacctTS), state: "REQUEUED", exit: "0:0"},
		{id: 103, start: s0.Add(6 * time.Minute).Format(sacctTS), end: s0.Add(15 * time.Minute).Format(sacctTS), state: "CANCELLED by 0", exit: "0:15"},
	}
	slurm := func(id, restart, gpus int, from, to time.Duration, state string, code int, src string, checked int) string {
		return fmt.Sprintf("%d|%d|%d|%d|%d|%d|%s|%d|%s|%d", id, restart, gpus, s0.Add(from).Unix(), s0.Add(to).Unix(), int64(gpus)*int64((to-from)/time.Second), state, code, src, checked)
	}
	hooks := func(id, restart, gpus int, from, to time.Duration, state string, checked int) string {
		start, end := s0.Add(from+time.Second), s0.Add(to+2*time.Second)
		// The test's epilogs give no exit code (-1: NULL).
		return fmt.Sprintf("%d|%d|%d|%d|%d|%d|%s|-1|epilog|%d", id, restart, gpus, start.Unix(), end.Unix(), int64(gpus)*(end.Unix()-start.Unix()), state, checked)
	}
	reconciled := []string{
		slurm(101, 0, 1, 0, 10*time.Minute, "completed", 0, "sacct", 1),
		slurm(102, 0, 4, 0, 20*time.Minute, "failed", 3, "sacct", 1),
		slurm(103, 0, 2, 0, 5*time.Minute, "requeued", 0, "sacct", 1),
		slurm(103, 1, 2, 6*time.Minute, 15*time.Minute, "cancelled", 0, "sacct", 1),
	}
	asHooks := func(checked int) []string {
		return []string{
			hooks(101, 0, 1, 0, 10*time.Minute, "completed", checked),
			hooks(102, 0, 4, 0, 20*time.Minute, "completed", checked),
			hooks(103, 0, 2, 0, 5*time.Minute, "completed", checked),
			hooks(103, 1, 2, 6*time.Minute, 15*time.Minute, "completed", checked),
		}
	}
	unknown101 := slices.Clone(reconciled)
	unknown101[0] = hooks(101, 0, 1, 0, 10*time.Minute, "completed", 0)
	gaveUp101 := slices.Clone(reconciled)
	gaveUp101[0] = hooks(101, 0, 1, 0, 10*time.Minute, "completed", 2)
	down := errors.New("slurmdbd unreachable")
	tests := []struct {
		name    string
		sacct   bool  // Deps.Sacct set
		fail    error // every reconciling call fails so
		records []slurmRun
		// Later is the time of the second pass; want1 and want2 the runs
		// after each pass; calls1 and calls2 the reconciling calls.
		later          time.Duration
		want1, want2   []string
		calls1, calls2 int
	}{
		{"sacct answers", true, nil, records, time.Hour, reconciled, reconciled, 1, 0},
		{"sacct off", false, nil, records, time.Hour, asHooks(0), asHooks(0), 0, 0},
		// A call that fails fast is asked once more for the times alone
		// (askSacctRunsOf), which fails too.
		{"sacct unreachable", true, down, records, time.Hour, asHooks(0), asHooks(0), 2, 2},
		{"unreachable for a day: still asked", true, down, records, 25 * time.Hour, asHooks(0), asHooks(0), 2, 2},
		{"sacct does not know a job", true, nil, records[1:], time.Hour, unknown101, unknown101, 1, 1},
		{"nor a day after its end", true, nil, records[1:], 25 * time.Hour, unknown101, gaveUp101, 1, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open(t)
			hookLate(t, e, 101, 0, s0, s0.Add(10*time.Minute), 0)
			hookLate(t, e, 102, 0, s0, s0.Add(20*time.Minute), 0, 1, 2, 3)
			hookLate(t, e, 103, 0, s0, s0.Add(5*time.Minute), 0, 1)
			hookLate(t, e, 103, 1, s0.Add(6*time.Minute), s0.Add(15*time.Minute), 0, 1)
			recs := tc.records
			var all, calls []string
			answer := fakeSacct(&recs, &all)
			now := s0.Add(time.Hour)
			deps := Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), SacctLocation: time.UTC}
			if tc.sacct {
				deps.Sacct = func(ctx context.Context, args ...string) ([]byte, error) {
					if runsCall(args) {
						calls = append(calls, strings.Join(args, " "))
						if tc.fail != nil {
							return nil, tc.fail
						}
					}
					return answer(ctx, args...)
				}
			}
			in := New(deps)
			if _, err := in.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want1, jobFigures(t, s)); diff != "" {
				t.Errorf("runs after the first pass (-want +got):\n%s", diff)
			}
			if len(calls) != tc.calls1 {
				t.Errorf("first pass: %d reconciling calls %q, want %d", len(calls), calls, tc.calls1)
			}
			if tc.calls1 > 0 {
				want := "-M c1 -j 103,102,101 -D --parsable2 --noheader -o " + sacctResourceFields
				if calls[0] != want {
					t.Errorf("sacct args %q, want %q", calls[0], want)
				}
			}
			hours := ledgerdb.Strings(t, s.Path, `SELECT hour, sum(alloc_gpu_s) FROM rollup_hourly GROUP BY hour ORDER BY hour`)
			calls = nil
			now = s0.Add(tc.later)
			if _, err := in.Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want2, jobFigures(t, s)); diff != "" {
				t.Errorf("runs after the second pass (-want +got):\n%s", diff)
			}
			if len(calls) != tc.calls2 {
				t.Errorf("second pass: %d reconciling calls %q, want %d", len(calls), calls, tc.calls2)
			}
			// The rollups hold the runs' allocation, and a pass that took
			// no new times left them as they were.
			var sum int64
			for _, r := range jobFigures(t, s) {
				var alloc int64
				fmt.Sscan(strings.Split(r, "|")[5], &alloc)
				sum += alloc
			}
			if got := ledgerdb.Scalar[int64](t, s.Path, `SELECT sum(alloc_gpu_s) FROM rollup_hourly`); got != sum {
				t.Errorf("rollup_hourly holds %d GPU-s, the runs %d", got, sum)
			}
			if tc.name == "sacct answers" {
				if diff := cmp.Diff(hours, ledgerdb.Strings(t, s.Path, `SELECT hour, sum(alloc_gpu_s) FROM rollup_hourly GROUP BY hour ORDER BY hour`)); diff != "" {
					t.Errorf("the second pass moved the rollups (-first +second):\n%s", diff)
				}
			}
		})
	}
}

// evFileIn is evFile of a job of cluster, holding GPU 0 of its node.
func evFileIn(t *testing.T, cluster, node string, job uint64, kind record.Kind, at time.Time) forged {
	t.Helper()
	ev := record.Event{Schema: record.EventSchema, Kind: kind, Time: at, Source: "prolog", Cluster: cluster, Node: node}
	ev.Job.ID, ev.Job.User, ev.Job.Account = job, "alice", "physics"
	idx := 0
	ev.Job.GPUs = []int{0}
	ev.GPUs = append(ev.GPUs, gpuIdentity(sim.UUID(node, 0), &idx))
	ev.Key = record.EventKey(cluster, job, 0, node, kind)
	data, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	return forged{node, record.EventFileName(cluster, job, 0, node, kind), data}
}

// TestReconcileBounded: one sacct call a cluster and a batch, at most
// sacctPerPass a pass, newest runs first: runs of twelve clusters take
// two passes, the ones left for the next pass keep their hooks' times
// meanwhile; a batch of more than sacctBatch runs takes more calls in
// the same pass.
func TestReconcileBounded(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	s0 := t0.Add(time.Minute)
	const clusters = sacctPerPass + 2
	for c := range clusters {
		cl, node := fmt.Sprintf("c%02d", c), fmt.Sprintf("g%02d", c)
		e.put(t, evFileIn(t, cl, node, uint64(200+c), record.JobStart, s0.Add(time.Second)),
			evFileIn(t, cl, node, uint64(200+c), record.JobEnd, s0.Add(10*time.Minute+2*time.Second)))
	}
	var asked []string
	now := s0.Add(time.Hour)
	in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), SacctLocation: time.UTC,
		Sacct: func(ctx context.Context, args ...string) ([]byte, error) {
			if !runsCall(args) {
				return nil, nil
			}
			asked = append(asked, args[1])
			var b strings.Builder
			for id := range strings.SplitSeq(args[3], ",") {
				fmt.Fprintf(&b, "%s|%s|%s|COMPLETED|0:0\n", id, s0.Format(sacctTS), s0.Add(10*time.Minute).Format(sacctTS))
			}
			return []byte(b.String()), nil
		}})
	checked := func() []string {
		return ledgerdb.Strings(t, s.Path, `SELECT sacct_checked, count(*), sum(alloc_gpu_s) FROM jobs GROUP BY sacct_checked ORDER BY sacct_checked`)
	}
	if _, err := in.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Newest first: the last cluster's run is the newest row.
	if len(asked) != sacctPerPass || asked[0] != fmt.Sprintf("c%02d", clusters-1) {
		t.Errorf("first pass asked about clusters %q, want %d calls from c%02d", asked, sacctPerPass, clusters-1)
	}
	want := []string{fmt.Sprintf("0|2|%d", 2*601), fmt.Sprintf("1|%d|%d", sacctPerPass, sacctPerPass*600)}
	if diff := cmp.Diff(want, checked()); diff != "" {
		t.Errorf("runs after the first pass (-want +got):\n%s", diff)
	}
	asked = nil
	if _, err := in.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c01", "c00"}, asked); diff != "" {
		t.Errorf("second pass asked (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{fmt.Sprintf("1|%d|%d", clusters, clusters*600)}, checked()); diff != "" {
		t.Errorf("runs after the second pass (-want +got):\n%s", diff)
	}

	// A batch of more runs than one call asks about: more calls, one pass.
	var files []forged
	for j := range sacctBatch + 5 {
		id := uint64(1000 + j)
		files = append(files, evFileIn(t, "c00", "g00", id, record.JobStart, s0.Add(time.Second)),
			evFileIn(t, "c00", "g00", id, record.JobEnd, s0.Add(10*time.Minute+2*time.Second)))
	}
	e.put(t, files...)
	asked = nil
	if _, err := in.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"c00", "c00"}, asked); diff != "" {
		t.Errorf("a pass over %d runs asked (-want +got):\n%s", sacctBatch+5, diff)
	}
	n := clusters + sacctBatch + 5
	if diff := cmp.Diff([]string{fmt.Sprintf("1|%d|%d", n, n*600)}, checked()); diff != "" {
		t.Errorf("runs after the big pass (-want +got):\n%s", diff)
	}
}

// TestParseSacctRunsOf: a batched answer is grouped by job, each job's
// runs in Start order; lines that do not parse are left out, not the
// answer; the exit signal is kept.
func TestParseSacctRunsOf(t *testing.T) {
	out := strings.Join([]string{
		"7|2026-03-02T01:00:00|2026-03-02T02:00:00|COMPLETED|0:0",
		"7|2026-03-02T00:00:00|2026-03-02T00:50:00|REQUEUED|0:0",
		"8|2026-03-02T00:00:00|2026-03-02T00:10:00|CANCELLED by 0|0:15",
		"9|yesterday|Unknown|RUNNING|0:0", // bad time
		"10|2026-03-02T00:00:00",          // too few fields
		"x|2026-03-02T00:00:00|2026-03-02T00:10:00|COMPLETED|0:0",
		"",
	}, "\n")
	at := func(h, m int) time.Time { return time.Date(2026, 3, 2, h, m, 0, 0, time.UTC) }
	zero, fifteen := 0, 15
	want := map[uint64][]sacctRun{
		7: {{start: at(0, 0), end: at(0, 50), state: "requeued", code: &zero, signal: &zero}, {start: at(1, 0), end: at(2, 0), state: "completed", code: &zero, signal: &zero}},
		8: {{start: at(0, 0), end: at(0, 10), state: "cancelled", code: &zero, signal: &fifteen}},
	}
	if diff := cmp.Diff(want, parseSacctRunsOf(out, time.UTC), cmp.AllowUnexported(sacctRun{}, runResources{})); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}
