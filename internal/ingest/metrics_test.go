package ingest

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestMetricsLagError: when the store cannot say when nodes were last
// heard of, the pass's own series are still set and the error comes back
// (it used to be dropped, leaving the lag series silently stale).
func TestMetricsLagError(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_000_000, 0)
	m := NewMetrics(prometheus.NewRegistry(), func() time.Time { return now })
	err := m.pass(context.Background(), s, now.Add(-time.Minute), now, nil)
	if err == nil || !strings.Contains(err.Error(), "ingest lag metric") {
		t.Errorf("pass on a closed store: %v, want an ingest lag metric error", err)
	}
	if got := testutil.ToFloat64(m.lastOK); got != float64(now.Unix()) {
		t.Errorf("last success = %v, want %d", got, now.Unix())
	}
	var nilM *Metrics
	if err := nilM.pass(context.Background(), s, now, now, nil); err != nil {
		t.Errorf("nil metrics: %v", err)
	}
}

// TestPostgresMetricsReadsBounded: the size and lag reads give up after
// a few seconds even with a context that never ends (finish passes one
// without cancel). A batch of the same writer holds its one connection,
// so the reads cannot get it: without a bound they would wait forever.
func TestPostgresMetricsReadsBounded(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, store.Options{URL: ledgerdb.NewPostgresDB(t)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	b, err := s.Begin(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	now := time.Unix(1_000_000, 0)
	m := NewMetrics(prometheus.NewRegistry(), func() time.Time { return now })
	done := make(chan error, 1)
	go func() { done <- m.pass(ctx, s, now.Add(-time.Minute), now, nil) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("metrics reads with the connection held: %v, want a deadline error", err)
		}
	case <-time.After(time.Minute):
		t.Fatal("metrics reads with the connection held did not return within a minute")
	}
}

// TestMetricsOverAllocation: a job hour made to break the invariant
// (idle over allocated) is logged, with its job and hour, and counted by
// the batch that next changes it, and only by that one.
func TestMetricsOverAllocation(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	reg := prometheus.NewRegistry()
	var logs strings.Builder
	m := NewMetrics(reg, func() time.Time { return t0 })
	log := slog.New(slog.NewTextHandler(&logs, nil))
	run := func(now time.Time) {
		t.Helper()
		if _, err := New(Deps{Store: s, Config: e.cfg, Log: log, Metrics: m, Now: func() time.Time { return now }, UID: os.Getuid()}).Pass(context.Background()); err != nil {
			t.Fatalf("pass: %v", err)
		}
	}
	e.put(t, evFile(t, "gpu001", 5, 0, record.JobStart, t0, 0),
		segFile(t, "gpu001", 1, 10, every(t0.Add(5*time.Second), 10*time.Second, 60, func(at time.Time) record.Sample { return busy("gpu001", 0, at, 5) })))
	run(t0.Add(20 * time.Minute))
	if got := testutil.ToFloat64(m.overAlloc); got != 0 {
		t.Fatalf("a sound ledger counted %v job hours over allocation\n%s", got, logs.String())
	}
	ledgerdb.Exec(t, s.Path, `UPDATE job_hours SET idle_gpu_s = alloc_gpu_s + 10000`)
	e.put(t, evFile(t, "gpu001", 5, 0, record.JobEnd, t0.Add(30*time.Minute), 0))
	run(t0.Add(40 * time.Minute))
	if got := testutil.ToFloat64(m.overAlloc); got != 1 {
		t.Errorf("job hours over allocation = %v, want 1", got)
	}
	if !strings.Contains(logs.String(), "job hour over its allocation") || !strings.Contains(logs.String(), "job=5 ") ||
		!strings.Contains(logs.String(), "hour=2026-03-02T00:00:00Z") {
		t.Errorf("the violation was not logged with its job and hour:\n%s", logs.String())
	}
	// A pass that does not touch the hour does not log it again.
	logs.Reset()
	run(t0.Add(50 * time.Minute))
	if got := testutil.ToFloat64(m.overAlloc); got != 1 || strings.Contains(logs.String(), "over its allocation") {
		t.Errorf("an untouched hour was checked again: count %v\n%s", got, logs.String())
	}
}
