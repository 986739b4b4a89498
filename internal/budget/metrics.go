package budget

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the budgets' gauges on gpuacct serve's /metrics, per
// account: the share of its budget used and the days it has left.
type Metrics struct {
	used, days *prometheus.GaugeVec
}

// NewMetrics registers the gauges on reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	m := &Metrics{
		used: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuacct_budget_used_ratio",
			Help: "Share of the account's budget in force used (1: spent), as of serve's last budget read."}, []string{"account"}),
		days: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "gpuacct_budget_days_left",
			Help: "Days until the account's budget in force runs out at the last 7 days' pace, or until its period ends when it does not run out before."}, []string{"account"}),
	}
	reg.MustRegister(m.used, m.days)
	return m
}

// Set replaces the gauges with bds' account budgets whose period holds
// now: a user's budget is in no gauge (the label is the account), nor a
// range that has not begun or has ended.
func (m *Metrics) Set(bds []Burndown, now time.Time) {
	m.used.Reset()
	m.days.Reset()
	for _, bd := range bds {
		if bd.Budget.User != "" || now.Before(bd.Period.Start) || !now.Before(bd.Period.End) {
			continue
		}
		m.used.WithLabelValues(bd.Budget.Account).Set(bd.Ratio)
		m.days.WithLabelValues(bd.Budget.Account).Set(bd.DaysLeft)
	}
}
