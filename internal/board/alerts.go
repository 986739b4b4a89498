package board

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// The kinds of Alert.
const (
	AlertForeign = "foreign"
	AlertIdle    = "idle"
	AlertStale   = "stale"
)

// Alert is one thing on the board that someone should look at: a process
// outside its GPU's allocation, a GPU held idle too long, a silent node.
// gpuacct check prints them and /metrics counts them.
type Alert struct {
	// Kind is AlertForeign, AlertIdle or AlertStale.
	Kind string
	Node string
	// GPU is the GPU's index; nil for a node-wide alert (stale).
	GPU *int
	// Job is the job holding the GPU (the first, if several); 0 if none.
	Job uint64
	// User is who to ask: the owner of the (first) foreign process, or
	// the idle job's user.
	User string
	// Since is when it began as far as known: the idle GPU's IdleSince,
	// the snapshot that showed the foreign process, the stale node's last
	// snapshot (zero when it never had one).
	Since time.Time
	// Text says what and where in one line.
	Text string
}

// Alerts lists the board's alerts in node order: each stale node (its
// GPUs' readings are too old to say more), each GPU with a foreign
// process, and each allocated GPU idle since more than idleAlert ago.
func Alerts(b *Board, idleAlert time.Duration) []Alert {
	var out []Alert
	for _, n := range b.Nodes {
		if n.Stale {
			out = append(out, staleAlert(n, b.At))
			continue
		}
		for _, g := range n.GPUs {
			if g.State == Foreign {
				out = append(out, foreignAlert(n, g))
			}
			if len(g.Jobs) > 0 && g.IdleSince != nil && b.At.Sub(*g.IdleSince) > idleAlert {
				out = append(out, idleGPUAlert(n, g, b.At))
			}
		}
	}
	return out
}

func staleAlert(n Node, at time.Time) Alert {
	a := Alert{Kind: AlertStale, Node: n.Name, Since: n.SnapshotAt}
	if n.SnapshotAt.IsZero() {
		a.Text = n.Name + ": stale: no live snapshot (is its agent running, with agent.live_dir set?)"
	} else {
		a.Text = fmt.Sprintf("%s: stale: last live snapshot %s ago (%s)", n.Name, age(at.Sub(n.SnapshotAt)), n.SnapshotAt.UTC().Format(time.RFC3339))
	}
	return a
}

func foreignAlert(n Node, g GPU) Alert {
	idx := g.Index
	a := Alert{Kind: AlertForeign, Node: n.Name, GPU: &idx, Since: n.SnapshotAt}
	if len(g.Jobs) > 0 {
		a.Job = g.Jobs[0].Job
	}
	procs := ForeignProcs(g)
	var who []string
	for _, p := range procs {
		s := fmt.Sprintf("%d of %s", p.PID, orUnknown(p.User))
		if p.Job != 0 {
			s += fmt.Sprintf(" (job %d)", p.Job)
		}
		who = append(who, s)
	}
	if len(procs) > 0 {
		a.User = procs[0].User
	}
	subject, verb := "process", "runs"
	if len(procs) > 1 {
		subject, verb = "processes", "run"
	}
	where := "on a GPU no job holds"
	if len(g.Jobs) > 0 {
		where = "outside " + jobList(g.Jobs)
	}
	a.Text = fmt.Sprintf("%s GPU %d: %s %s %s %s", n.Name, g.Index, subject, strings.Join(who, ", "), verb, where)
	return a
}

func idleGPUAlert(n Node, g GPU, at time.Time) Alert {
	idx := g.Index
	j := g.Jobs[0]
	a := Alert{Kind: AlertIdle, Node: n.Name, GPU: &idx, Job: j.Job, User: j.User, Since: *g.IdleSince}
	a.Text = fmt.Sprintf("%s GPU %d: allocated to %s but idle for %s (since %s)", n.Name, g.Index, jobList(g.Jobs),
		age(at.Sub(*g.IdleSince)), g.IdleSince.UTC().Format(time.RFC3339))
	return a
}

// ForeignProcs are the processes that make g foreign: any process on a
// GPU no job holds, else those the agent marked or whose job does not
// hold the GPU (as Build decides the state).
func ForeignProcs(g GPU) []record.LiveProc {
	if len(g.Jobs) == 0 {
		return g.Procs
	}
	var out []record.LiveProc
	for _, p := range g.Procs {
		if p.Foreign || (p.Job != 0 && !holds(g.Jobs, p.Job)) {
			out = append(out, p)
		}
	}
	return out
}

// jobList is "job 17 (alice)" or "jobs 17 (alice), 18 (bob)".
func jobList(jobs []record.LiveJob) string {
	var parts []string
	for _, j := range jobs {
		s := strconv.FormatUint(j.Job, 10)
		if j.User != "" {
			s += " (" + j.User + ")"
		}
		parts = append(parts, s)
	}
	if len(parts) == 1 {
		return "job " + parts[0]
	}
	return "jobs " + strings.Join(parts, ", ")
}

func orUnknown(user string) string {
	if user == "" {
		return "an unknown user"
	}
	return user
}

// age is d to the second (a clock a little behind reads as 0s).
func age(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d.Round(time.Second)
}
