package ingest

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/store/storetest"
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
	s, err := store.Open(ctx, store.Options{URL: storetest.NewPostgresDB(t)})
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
