package ingest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

func TestParseSacctDetails(t *testing.T) {
	out := strings.Join([]string{
		"101|101|normal|gpuacct:ignore benchmark",
		"102|40_2|long|",
		"103|40_[3-9]||pending array",
		"104|104|normal|a|b||c",                // sacct -P does not escape '|'
		"105|105+1|normal|het",                 // heterogeneous: no array task
		"garbage",                              // no fields
		"x|106|normal|not a job id",            // JobIDRaw not a number
		"107|107",                              // QOS and Comment missing
		"111|111|normal",                       // Comment missing
		"",                                     // blank
		"108|108|normal|first",                 // listed twice: the last wins
		"108|108|debug|second\r",               // CRLF
		"0|0|normal|zero is no job",            //
		"109|abc_def|normal|odd JobID",         //
		" 110 | 41_0 | high | spaced comment ", //
	}, "\n")
	want := map[uint64]store.JobDetails{
		101: {Comment: "gpuacct:ignore benchmark", QOS: "normal"},
		102: {QOS: "long", ArrayJobID: 40, ArrayTaskID: 2},
		103: {Comment: "pending array"},
		104: {Comment: "a|b||c", QOS: "normal"},
		105: {Comment: "het", QOS: "normal"},
		108: {Comment: "second", QOS: "debug"},
		109: {Comment: "odd JobID", QOS: "normal"},
		110: {Comment: "spaced comment", QOS: "high", ArrayJobID: 41, ArrayTaskID: 0},
	}
	if d := cmp.Diff(want, parseSacctDetails(out)); d != "" {
		t.Fatalf("parse (-want +got):\n%s", d)
	}
}

// TestPassFillsJobDetails: a pass asks sacct once per batch for the
// comment and array ids of jobs not yet looked up, before the ignore tag
// is applied, so a tagged job is ignored after the same pass; jobs sacct
// does not know are asked again, until a day after their end.
func TestPassFillsJobDetails(t *testing.T) {
	e := newEnv(t)
	e.cfg.Report.Requests = filepath.Join(e.root, "requests")
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	if _, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 1, GPUsPerNode: 4, Start: start,
		Duration: time.Hour, Interval: 10 * time.Second, JobsPerNode: 4, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	s := e.open(t)
	defer s.Close()
	var ids []string

	var calls atomic.Int32
	var tagged, arrayed, unknown string
	fail := false
	sacct := func(ctx context.Context, args ...string) ([]byte, error) {
		if runsCall(args) {
			return nil, nil // job times: TestReconcile*
		}
		calls.Add(1)
		if fail {
			return nil, errors.New("slurmdbd unreachable")
		}
		var list string
		for i, a := range args {
			if a == "-j" && i+1 < len(args) {
				list = args[i+1]
			}
		}
		if !strings.Contains(strings.Join(args, " "), "-o JobIDRaw,JobID,QOS,Comment") {
			t.Errorf("sacct args %q", args)
		}
		var b strings.Builder
		for _, id := range strings.Split(list, ",") {
			switch id {
			case unknown:
			case tagged:
				b.WriteString(id + "|" + id + "|long|gpuacct:ignore benchmark\n")
			case arrayed:
				b.WriteString(id + "|40_2||\n")
			default:
				b.WriteString(id + "|" + id + "|normal|plain\n")
			}
		}
		return []byte(b.String()), nil
	}
	now := start.Add(2 * time.Hour)
	// First pass without sacct: the jobs exist, nothing is looked up.
	e.pass(t, s, now)
	ledgerdb.Query(t, s.Path, `SELECT job_id FROM jobs ORDER BY job_id`, nil, func(scan func(...any)) {
		var id string
		scan(&id)
		ids = append(ids, id)
	})
	if len(ids) < 3 {
		t.Fatalf("jobs %v, want 3 or more", ids)
	}
	tagged, arrayed, unknown = ids[0], ids[1], ids[2]

	run := func(now time.Time) {
		t.Helper()
		in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), Sacct: sacct, SacctLocation: time.UTC})
		if _, err := in.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
		in.applyRequests(context.Background())
	}
	type row struct {
		Comment, QOS     string
		ArrJob, ArrTask  int64
		Checked, Ignored int
	}
	get := func(id string) row {
		t.Helper()
		var r row
		ledgerdb.Row(t, s.Path, `SELECT coalesce(comment, ''), coalesce(qos, ''), coalesce(array_job_id, -1), coalesce(array_task_id, -1), details_checked, ignored FROM jobs WHERE job_id = ?`, []any{id},
			&r.Comment, &r.QOS, &r.ArrJob, &r.ArrTask, &r.Checked, &r.Ignored)
		return r
	}

	// sacct down: the pass goes on, nothing is marked.
	fail = true
	run(now)
	if c := calls.Load(); c != 1 {
		t.Fatalf("sacct calls %d, want 1", c)
	}
	if r := get(tagged); r.Checked != 0 {
		t.Fatalf("tagged job after a failed sacct: %+v", r)
	}

	fail = false
	run(now)
	if c := calls.Load(); c != 2 {
		t.Fatalf("sacct calls %d, want 2 (one per batch)", c)
	}
	if got, want := get(tagged), (row{"gpuacct:ignore benchmark", "long", -1, -1, 1, 1}); got != want {
		t.Errorf("tagged job %+v, want %+v", got, want)
	}
	if got, want := get(arrayed), (row{"", "", 40, 2, 1, 0}); got != want {
		t.Errorf("array job %+v, want %+v", got, want)
	}
	if got, want := get(ids[3]), (row{"plain", "normal", -1, -1, 1, 0}); got != want {
		t.Errorf("plain job %+v, want %+v", got, want)
	}
	if got := get(unknown); got.Checked != 0 {
		t.Errorf("job sacct does not know yet: %+v, want unchecked", got)
	}
	var ignoredTotal int64
	if ignoredTotal = ledgerdb.Scalar[int64](t, s.Path, `SELECT count(*) FROM jobs WHERE ignored = 1`); ignoredTotal != 1 {
		t.Fatalf("ignored jobs %d; want 1", ignoredTotal)
	}

	// Asked again next pass; given up a day after its end.
	run(now.Add(time.Minute))
	if c := calls.Load(); c != 3 {
		t.Fatalf("sacct calls %d, want 3", c)
	}
	if got := get(unknown); got.Checked != 0 {
		t.Errorf("unknown job after a minute: %+v", got)
	}
	// A failed call a day on answers for no job: none is given up.
	fail = true
	run(now.Add(25 * time.Hour))
	if got := get(unknown); got.Checked != 0 {
		t.Errorf("unknown job after a failed call a day on: %+v, want still unchecked (0)", got)
	}
	fail = false
	run(now.Add(25 * time.Hour))
	if got := get(unknown); got.Checked != 2 {
		t.Errorf("unknown job after a day: %+v, want given up (2)", got)
	}
	c := calls.Load()
	run(now.Add(26 * time.Hour))
	if calls.Load() != c {
		t.Errorf("sacct asked with nothing left to look up")
	}
}

// TestJobDetailsBounded: the details calls of one pass are at most
// sacctPerPass, however many clusters and batches wait: jobs of
// sacctPerPass clusters over two batches take two passes, the second
// asking only about what the first left.
func TestJobDetailsBounded(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	s0 := t0.Add(time.Minute)
	const clusters = sacctPerPass
	jobs := sacctBatch + clusters
	var files []forged
	for j := range jobs {
		cl, node := fmt.Sprintf("c%02d", j%clusters), fmt.Sprintf("g%02d", j%clusters)
		files = append(files, evFileIn(t, cl, node, uint64(1000+j), record.JobStart, s0.Add(time.Second)),
			evFileIn(t, cl, node, uint64(1000+j), record.JobEnd, s0.Add(10*time.Minute)))
	}
	e.put(t, files...)
	var calls int
	now := s0.Add(time.Hour)
	in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), SacctLocation: time.UTC,
		Sacct: func(ctx context.Context, args ...string) ([]byte, error) {
			if !strings.HasSuffix(strings.Join(args, " "), "-o JobIDRaw,JobID,QOS,Comment") {
				return nil, nil
			}
			calls++
			var b strings.Builder
			for id := range strings.SplitSeq(args[3], ",") {
				fmt.Fprintf(&b, "%s|%s|normal|plain\n", id, id)
			}
			return []byte(b.String()), nil
		}})
	checked := func() []string {
		return ledgerdb.Strings(t, s.Path, `SELECT details_checked, count(*) FROM jobs GROUP BY details_checked ORDER BY details_checked`)
	}
	if _, err := in.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls > sacctPerPass {
		t.Errorf("first pass made %d details calls, want at most %d", calls, sacctPerPass)
	}
	if got := checked(); len(got) != 2 || !strings.HasPrefix(got[0], "0|") {
		t.Errorf("jobs after the first pass %q, want some left for the next", got)
	}
	calls = 0
	if _, err := in.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	if calls == 0 || calls > sacctPerPass {
		t.Errorf("second pass made %d details calls, want 1 to %d", calls, sacctPerPass)
	}
	if diff := cmp.Diff([]string{fmt.Sprintf("1|%d", jobs)}, checked()); diff != "" {
		t.Errorf("jobs after the second pass (-want +got):\n%s", diff)
	}
}
