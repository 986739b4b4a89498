package nfssync

import "github.com/prometheus/client_golang/prometheus"

// Metrics are what /metrics shows about the daemon.
type Metrics struct {
	Events     prometheus.Counter
	Fixes      prometheus.Counter
	Skips      *prometheus.CounterVec
	Delay      prometheus.Histogram
	Pending    prometheus.Gauge
	Watches    prometheus.Gauge
	WatchLimit prometheus.Gauge
	Unwatched  prometheus.Counter
	Overflows  prometheus.Counter
	Rescans    prometheus.Counter
	Window     prometheus.Gauge
}

// NewMetrics registers the metrics with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		Events: newCounter("nfssync_events_total", "Files closed after writing on this server, as seen by the watch."),
		Fixes:  newCounter("nfssync_fixes_total", "Files touched so that other clients see their last write."),
		Skips: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "nfssync_skips_total",
			Help: "Files not touched, by reason."}, []string{"reason"}),
		Delay: prometheus.NewHistogram(prometheus.HistogramOpts{Name: "nfssync_fix_delay_seconds",
			Help:    "Time from a file's last close to its touch.",
			Buckets: []float64{0.25, 0.5, 1, 1.25, 1.5, 2, 2.5, 3, 5, 10, 30}}),
		Pending:    newGauge("nfssync_pending_files", "Files waiting for their touch."),
		Watches:    newGauge("nfssync_inotify_watches", "Directories watched through inotify."),
		WatchLimit: newGauge("nfssync_inotify_watch_limit_reached", "1 when some directories are not watched because the inotify watch limit was reached."),
		Unwatched:  newCounter("nfssync_unwatched_dirs_total", "Directories that could not be watched because of the inotify watch limit."),
		Overflows:  newCounter("nfssync_queue_overflows_total", "Kernel event queue overflows; each starts a rescan."),
		Rescans:    newCounter("nfssync_rescans_total", "Rescans for recently changed files after an overflow."),
		Window:     newGauge("nfssync_window_seconds", "Wait after a file's mtime before it is touched."),
	}
	reg.MustRegister(m.Events, m.Fixes, m.Skips, m.Delay, m.Pending, m.Watches, m.WatchLimit,
		m.Unwatched, m.Overflows, m.Rescans, m.Window)
	return m
}

func newCounter(name, help string) prometheus.Counter {
	return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
}

func newGauge(name, help string) prometheus.Gauge {
	return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
}
