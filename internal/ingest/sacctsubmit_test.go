package ingest

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestParseSacctSubmit: the reconciling call's last field, Submit, is the
// run's submit time; an answer without it (the runs-only retry, -X), or
// with Unknown or a stamp that does not parse, gives none and keeps the
// run.
func TestParseSacctSubmit(t *testing.T) {
	const run = "7|2026-11-28T09:10:00|2026-11-28T09:20:00|COMPLETED|0:0|2|00:00.300|600M||UNLIMITED|600|1|billing=2,cpu=2,gres/gpu=2"
	tests := []struct {
		name string
		line string
		want time.Time
	}{
		{"submit", run + "|2026-11-28T09:04:30", time.Date(2026, 11, 28, 9, 4, 30, 0, time.UTC)},
		{"unknown", run + "|Unknown", time.Time{}},
		{"garbled", run + "|yesterday", time.Time{}},
		{"runs only", "7|2026-11-28T09:10:00|2026-11-28T09:20:00|COMPLETED|0:0", time.Time{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runs := parseSacctRunsOf(tc.line+"\n", time.UTC)[7]
			if len(runs) != 1 {
				t.Fatalf("runs of job 7 = %+v, want one", runs)
			}
			if !runs[0].submit.Equal(tc.want) || runs[0].start.IsZero() {
				t.Errorf("submit = %v (start %v), want %v", runs[0].submit, runs[0].start, tc.want)
			}
		})
	}
}

// TestReconcileTakesSubmit: the reconciling call records each run's
// submit from sacct (a requeued job's runs each their own); a run sacct
// gives Unknown for keeps none.
func TestReconcileTakesSubmit(t *testing.T) {
	s0 := t0.Add(time.Hour)
	ts := func(d time.Duration) string { return s0.Add(d).Format(sacctTS) }
	records := []slurmRun{
		{id: 101, start: ts(0), end: ts(10 * time.Minute), state: "COMPLETED", exit: "0:0", submit: ts(-7 * time.Minute)},
		{id: 102, start: ts(0), end: ts(20 * time.Minute), state: "FAILED", exit: "3:0"},
		{id: 103, start: ts(0), end: ts(5 * time.Minute), state: "REQUEUED", exit: "0:0", submit: ts(-30 * time.Second)},
		{id: 103, start: ts(6 * time.Minute), end: ts(15 * time.Minute), state: "COMPLETED", exit: "0:0", submit: ts(5 * time.Minute)},
	}
	e := newEnv(t)
	s := e.open(t)
	hookLateRuns(t, e, s0)
	var all []string
	now := s0.Add(time.Hour)
	deps := Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), SacctLocation: time.UTC,
		Sacct: fakeSacct(&records, &all)}
	if _, err := New(deps).Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	unix := func(d time.Duration) string { return strconv.FormatInt(s0.Add(d).Unix(), 10) }
	want := []string{"101|0|" + unix(-7*time.Minute), "102|0|-1", "103|0|" + unix(-30*time.Second), "103|1|" + unix(5*time.Minute)}
	got := ledgerdb.Strings(t, s.Path, `SELECT job_id, restart, coalesce(submit, -1) FROM jobs ORDER BY job_id, restart`)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("submit (-want +got):\n%s", d)
	}
}
