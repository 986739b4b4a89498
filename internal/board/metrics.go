package board

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// scrapeTimeout bounds the board build of one scrape (its notes read):
// a scrape must answer well within Prometheus's own timeout.
const scrapeTimeout = 5 * time.Second

// allStates are the states gpuacct_board_gpus always reports, 0 included,
// so a state that empties shows 0 rather than vanishing.
func allStates() []State {
	return []State{Free, Reserved, Booked, Busy, Idle, Foreign, Drained, Down, Stale}
}

// collector is the board as Prometheus gauges, built at scrape time from
// the Source (which shares its build with the web board).
type collector struct {
	src       *Source
	idleAlert time.Duration

	gpus, free, foreign, idle, stale, slurmUp, age, boardAge, old *prometheus.Desc
}

// NewCollector returns the board's gauges for serve's /metrics. Each
// scrape takes src.Current within a short timeout; idleAlert is how long
// an allocated GPU may be idle before it counts (board.idle_alert).
func NewCollector(src *Source, idleAlert time.Duration) prometheus.Collector {
	return &collector{
		src: src, idleAlert: idleAlert,
		gpus: prometheus.NewDesc("gpuacct_board_gpus", "GPUs on the live board by state (every state, 0 included).", []string{"state"}, nil),
		free: prometheus.NewDesc("gpuacct_board_free_gpus",
			"Free GPUs now (board.IsFree: reserved and booked ones are not) by model and partition (a node in two partitions counts in both).", []string{"model", "partition"}, nil),
		foreign: prometheus.NewDesc("gpuacct_board_foreign_processes",
			"Processes running outside their GPU's allocation, or on a GPU no job holds, on fresh nodes.", nil, nil),
		idle: prometheus.NewDesc("gpuacct_board_idle_gpus_over_threshold",
			"Allocated GPUs idle for longer than board.idle_alert.", nil, nil),
		stale: prometheus.NewDesc("gpuacct_board_stale_nodes",
			"Nodes with no live snapshot newer than 3 agent intervals.", nil, nil),
		slurmUp: prometheus.NewDesc("gpuacct_board_slurm_up",
			"1 when the board holds Slurm's view of nodes and reservations, 0 when Slurm was unreachable or is not asked.", nil, nil),
		age: prometheus.NewDesc("gpuacct_board_snapshot_age_seconds",
			"Age of each node's newest live snapshot (absent for a node that has none).", []string{"node"}, nil),
		boardAge: prometheus.NewDesc("gpuacct_board_age_seconds",
			"Age of the board served: under a second or two while boards are built, growing while they cannot be (a hung live directory or ledger).", nil, nil),
		old: prometheus.NewDesc("gpuacct_board_old",
			"1 when no board could be built for this scrape in time and the last one built is served, aged to now; 0 otherwise.", nil, nil),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.gpus, c.free, c.foreign, c.idle, c.stale, c.slurmUp, c.age, c.boardAge, c.old} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	snap := c.src.Current(ctx)
	now := c.src.o.Now()
	b := &snap.Board
	boardAge, old := age(now.Sub(b.At)), 0.0
	if snap.Old {
		// The last good build's values, but its ages and staleness at
		// now: a hung /data must raise the stale alerts, not freeze them.
		aged := b.Aged(now)
		b, old = &aged, 1
	}

	states := map[State]int{}
	foreign := 0
	for _, n := range b.Nodes {
		for _, g := range n.GPUs {
			states[g.State]++
			if g.State == Foreign {
				foreign += len(ForeignProcs(g))
			}
		}
		if !n.SnapshotAt.IsZero() {
			ch <- gauge(c.age, age(b.At.Sub(n.SnapshotAt)).Seconds(), n.Name)
		}
	}
	for _, s := range allStates() {
		ch <- gauge(c.gpus, float64(states[s]), string(s))
	}
	for _, f := range b.Totals.Free {
		ch <- gauge(c.free, float64(f.Free), f.Model, f.Partition)
	}
	idle := 0
	for _, a := range Alerts(b, c.idleAlert) {
		if a.Kind == AlertIdle {
			idle++
		}
	}
	up := 0.0
	if b.Slurm {
		up = 1
	}
	ch <- gauge(c.foreign, float64(foreign))
	ch <- gauge(c.idle, float64(idle))
	ch <- gauge(c.stale, float64(b.Totals.StaleNodes))
	ch <- gauge(c.slurmUp, up)
	ch <- gauge(c.boardAge, boardAge.Seconds())
	ch <- gauge(c.old, old)
}

func gauge(d *prometheus.Desc, v float64, labels ...string) prometheus.Metric {
	return prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
}
