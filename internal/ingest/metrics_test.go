package ingest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
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
