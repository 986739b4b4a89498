package notify

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aicloud/gpusuite/internal/store"
)

// Metrics counts the notifier's messages per rule, channel and outcome.
type Metrics struct {
	decisions *prometheus.CounterVec
	outcomes  *prometheus.CounterVec
	queue     *prometheus.GaugeVec
	oldest    prometheus.Gauge
}

// NewMetrics registers the notifier's counters on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpusuite_notify_decided_total",
			Help: "Messages the notifier's rules decided and kept, per rule and channel."}, []string{"rule", "channel"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "gpusuite_notify_deliveries_total",
			Help: "Delivery attempts per rule, channel and outcome (sent, retry, failed)."}, []string{"rule", "channel", "outcome"}),
		queue: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpusuite_notify_messages",
			Help: "Messages kept in the ledger per state (queued, sent, failed), as of the notifier's last pass."}, []string{"state"}),
		oldest: prometheus.NewGauge(prometheus.GaugeOpts{Name: "gpusuite_notify_oldest_due_seconds",
			Help: "How long the oldest queued message has been due, as of the notifier's last pass (0: none); a stuck queue grows it."}),
	}
	reg.MustRegister(m.decisions, m.outcomes, m.queue, m.oldest)
	return m
}

func (m *Metrics) decided(rule, channel string) {
	if m != nil {
		m.decisions.WithLabelValues(rule, channel).Inc()
	}
}

func (m *Metrics) delivered(rule, channel, outcome string) {
	if m != nil {
		m.outcomes.WithLabelValues(rule, channel, outcome).Inc()
	}
}

func (m *Metrics) queued(q store.NotifyQueue, now time.Time) {
	if m == nil {
		return
	}
	m.queue.WithLabelValues("queued").Set(float64(q.Queued))
	m.queue.WithLabelValues("sent").Set(float64(q.Sent))
	m.queue.WithLabelValues("failed").Set(float64(q.Failed))
	due := 0.0
	if q.OldestDue != nil && now.After(*q.OldestDue) {
		due = now.Sub(*q.OldestDue).Seconds()
	}
	m.oldest.Set(due)
}
