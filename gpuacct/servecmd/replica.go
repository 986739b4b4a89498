package servecmd

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
)

// replicaLagWait bounds the lag's query at each scrape.
const replicaLagWait = 2 * time.Second

// replicaLag is gpuacct_store_replica_lag_seconds of a read-only serve
// on PostgreSQL: asked of the ledger at each scrape, served only while
// the ledger is a streaming standby, so that a dashboard on a standby
// says how old what it shows may be.
type replicaLag struct {
	st   *store.Ledger
	desc *prometheus.Desc
	log  *slog.Logger
}

// registerReplicaLag opens a read-only store of its own for the lag
// (the board's and the web's are theirs) and registers it on reg; SQLite
// has no standby, and registers nothing. closeLag closes that store.
func registerReplicaLag(ctx context.Context, cfg config.Config, reg prometheus.Registerer, log *slog.Logger) (closeLag func(), err error) {
	if cfg.Store.URL == "" {
		return func() {}, nil
	}
	st, err := store.Open(ctx, store.Options{URL: cfg.Store.URL, ReadOnly: true, BusyTimeout: cfg.Store.BusyTimeout.Duration})
	if err != nil {
		return nil, fmt.Errorf("open store %q for the replica lag: %w", store.RedactURL(cfg.Store.Location()), err)
	}
	reg.MustRegister(replicaLag{st: st, log: log, desc: prometheus.NewDesc("gpuacct_store_replica_lag_seconds",
		"How far the standby serve reads from is behind its primary: 0 once it replayed all it received, else the age of its last replayed transaction. Absent unless the ledger is a PostgreSQL standby.", nil, nil)})
	return func() { _ = st.Close() }, nil
}

func (c replicaLag) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect leaves the lag out when it cannot be read: the rest of
// /metrics still answers, and the log says why.
func (c replicaLag) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), replicaLagWait)
	defer cancel()
	lag, standby, err := c.st.ReplicaLag(ctx)
	if err != nil {
		c.log.Warn("replica lag not read", "err", err)
		return
	}
	if standby {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, lag.Seconds())
	}
}
