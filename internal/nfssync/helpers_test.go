package nfssync

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

func newTestDaemon(t *testing.T, o Options, window time.Duration) (*Daemon, *Metrics) {
	t.Helper()
	if o.Workers == 0 {
		o.Workers = 2
	}
	if o.MaxPending == 0 {
		o.MaxPending = 100000
	}
	m := NewMetrics(prometheus.NewRegistry())
	fx := NewFixer(window, time.Now, discardLogger())
	return NewDaemon(o, fx, m, discardLogger(), time.Now), m
}

// startDaemon runs d until the test ends and waits for its watches.
func startDaemon(t *testing.T, d *Daemon) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan struct{})
	errc := make(chan error, 1)
	go func() { errc <- d.Run(ctx, func() { close(ready) }) }()
	select {
	case <-ready:
	case err := <-errc:
		cancel()
		t.Fatalf("daemon: %v", err)
	case <-time.After(settled):
		cancel()
		t.Fatalf("daemon not ready after %s", settled)
	}
	t.Cleanup(func() {
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("daemon: %v", err)
		}
	})
}

func counter(c prometheus.Counter) float64 {
	var m dto.Metric
	c.Write(&m)
	return m.GetCounter().GetValue()
}

func gauge(g prometheus.Gauge) float64 {
	var m dto.Metric
	g.Write(&m)
	return m.GetGauge().GetValue()
}

func skips(m *Metrics, reason string) float64 {
	return counter(m.Skips.WithLabelValues(reason))
}
