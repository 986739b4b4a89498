package ingest

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aicloud/gpusuite/internal/store"
)

// Metrics are ingest's Prometheus series, on a registry of the caller's.
// A nil *Metrics records nothing.
type Metrics struct {
	files, records, quarantine, refuse, dups prometheus.Counter
	overAlloc                                prometheus.Counter
	passes                                   *prometheus.CounterVec
	gpuEvents                                *prometheus.CounterVec
	lastOK, dbSize, passSeconds              prometheus.Gauge
	lag                                      *prometheus.GaugeVec
	now                                      func() time.Time
}

// NewMetrics registers ingest's series on reg.
func NewMetrics(reg prometheus.Registerer, now func() time.Time) *Metrics {
	m := &Metrics{
		files:      prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuacct_ingest_files_total", Help: "Files ingested."}),
		records:    prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuacct_ingest_records_total", Help: "Records ingested (events, samples, aggregates)."}),
		quarantine: prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuacct_ingest_quarantined_total", Help: "Bad files moved to quarantine."}),
		refuse:     prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuacct_ingest_refused_total", Help: "Files refused: not the service user's, or in a directory others can write."}),
		dups:       prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuacct_ingest_duplicate_files_total", Help: "Files already ingested with the same content."}),
		overAlloc: prometheus.NewCounter(prometheus.CounterOpts{Name: "gpuacct_ingest_job_hours_over_allocation_total",
			Help: "Job hours a batch changed whose used, idle or sampled GPU-seconds passed the allocated ones (never expected)."}),
		gpuEvents: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuacct_ingest_gpu_events_total",
			Help: "GPU events ingested, by kind (xid, ecc_single, ecc_double, throttle_start, throttle_end): Xid and ECC errors of the whole cluster, alertable in one place."}, []string{"kind"}),
		passes:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpuacct_ingest_passes_total", Help: "Ingest passes by result."}, []string{"result"}),
		lastOK:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuacct_ingest_last_success_timestamp_seconds", Help: "End of the last successful pass."}),
		dbSize:      prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuacct_store_size_bytes", Help: "Database file size including WAL/journal."}),
		passSeconds: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpuacct_ingest_pass_duration_seconds", Help: "Duration of the last pass."}),
		lag:         prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuacct_ingest_lag_seconds", Help: "Now minus the newest record time ingested from the node."}, []string{"node"}),
		now:         now,
	}
	reg.MustRegister(m.files, m.records, m.quarantine, m.refuse, m.dups, m.overAlloc, m.gpuEvents, m.passes, m.lastOK, m.dbSize, m.passSeconds, m.lag)
	return m
}

func (m *Metrics) ingested(files, records int) {
	if m != nil {
		m.files.Add(float64(files))
		m.records.Add(float64(records))
	}
}

// gpuEventsIngested counts the GPU events a committed batch stored, by kind.
func (m *Metrics) gpuEventsIngested(kinds map[string]int) {
	if m != nil {
		for k, n := range kinds {
			m.gpuEvents.WithLabelValues(k).Add(float64(n))
		}
	}
}

func (m *Metrics) quarantined() {
	if m != nil {
		m.quarantine.Inc()
	}
}

func (m *Metrics) refused() {
	if m != nil {
		m.refuse.Inc()
	}
}

func (m *Metrics) duplicate() {
	if m != nil {
		m.dups.Inc()
	}
}

// maxOverAllocLogged bounds the job hours one batch's check reads and
// logs: a bug that breaks every hour must not flood the log.
const maxOverAllocLogged = 100

// checkTouched holds the job hours a committed batch changed to issue
// #14's invariant (used, idle and sampled GPU-seconds within allocated):
// each one that breaks it is logged, with its job and hour, and counted.
// Only the batch that changed an hour checks it, so a violation is
// logged once, not every pass. The read is bounded like the metrics'
// (metricsReadWait); its failure is logged and the pass goes on.
func checkTouched(ctx context.Context, s *store.Ledger, hours []store.JobHour, log *slog.Logger, m *Metrics) {
	if len(hours) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, metricsReadWait)
	defer cancel()
	vs, err := s.HourViolations(ctx, hours, maxOverAllocLogged)
	if err != nil {
		log.Warn("could not check the job hours of the batch against their allocation", "err", err)
		return
	}
	for _, v := range vs {
		log.Error("job hour over its allocation: used, idle or sampled GPU-seconds pass the allocated ones (a ledger bug; gpuacct check counts them)",
			"cluster", v.Cluster, "job", v.JobID, "restart", v.Restart, "node", v.Node, "hour", v.Hour.Format(time.RFC3339),
			"allocated_gpu_s", v.AllocS, "used_gpu_s", v.UsedS, "idle_gpu_s", v.IdleS, "sampled_s", v.SampleS)
	}
	if m != nil {
		m.overAlloc.Add(float64(len(vs)))
	}
}

// metricsReadWait bounds pass's reads of the store together: a server
// that takes the connection but does not answer (stopped, an I/O hang)
// must not stop serve's loop here, where the caller's cancel does not
// reach (finish reads after a cancelled pass too).
const metricsReadWait = 5 * time.Second

// pass records a finished pass; the per-node lag comes from the store, and
// an error reading it is returned (the pass's own series are set anyway).
func (m *Metrics) pass(ctx context.Context, s *store.Ledger, start, end time.Time, err error) error {
	if m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, metricsReadWait)
	defer cancel()
	m.passSeconds.Set(end.Sub(start).Seconds())
	if err != nil {
		m.passes.WithLabelValues("error").Inc()
	} else {
		m.passes.WithLabelValues("ok").Inc()
		m.lastOK.Set(float64(end.Unix()))
	}
	// A size that could not be read leaves the gauge as it was: 0 would
	// read as an emptied ledger.
	if n, serr := s.DatabaseSize(ctx); serr == nil {
		m.dbSize.Set(float64(n))
	}
	nodes, lerr := s.NodeLastRecords(ctx)
	if lerr != nil {
		return fmt.Errorf("ingest lag metric: %w", lerr)
	}
	now := m.now()
	for _, n := range nodes {
		m.lag.WithLabelValues(n.Cluster + "/" + n.Name).Set(now.Sub(time.Unix(n.LastRecord, 0)).Seconds())
	}
	return nil
}
