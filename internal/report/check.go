package report

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
)

// CheckOptions are gpuacct check's thresholds.
type CheckOptions struct {
	Now time.Time
	// Stale: a node that shipped nothing for this long is a problem.
	Stale time.Duration
	// Lag: the last successful ingest pass must be newer than this.
	Lag time.Duration
	// Forget: nodes silent for longer are decommissioned (0: never).
	Forget time.Duration
	// Incoming and Quarantine are ingest's directories ("" skips them);
	// a file in incoming older than the start of the LeftPasses-th most
	// recent pass is a problem (0: not checked).
	Incoming, Quarantine string
	LeftPasses           int
	// Grace is ingest.grace: a file younger than that may be waiting
	// for its job's event (ingest defers it), so it is not yet stuck.
	Grace time.Duration
	// Clusters, when set, are the only clusters whose nodes are checked
	// (Scope.Filter); ingest's passes and files are the ledger's own.
	Clusters []string
}

// CheckOptionsFrom is the options the configuration gives (report.check_*,
// ingest.incoming, ingest.quarantine, ingest.grace); gpuacct check and the
// web's health answer share it.
func CheckOptionsFrom(cfg config.Config, now time.Time) CheckOptions {
	return CheckOptions{Now: now, Stale: cfg.Report.CheckStale.Duration, Lag: cfg.Report.CheckLag.Duration, Forget: cfg.Report.CheckForget.Duration,
		Incoming: cfg.Ingest.Incoming, Quarantine: cfg.Ingest.Quarantine, LeftPasses: cfg.Report.CheckLeftPasses, Grace: cfg.Ingest.Grace.Duration}
}

// Check returns one line per problem (none: healthy) and a one-line
// summary of what was checked.
func (d *Ledger) Check(ctx context.Context, o CheckOptions) (problems []string, summary string, err error) {
	now := o.Now.Unix()
	seen, err := d.st.NodesSeen(ctx)
	if err != nil {
		return nil, "", d.wrap(err)
	}
	nodes, stale := 0, 0
	want := set(o.Clusters)
	for _, n := range seen {
		if len(want) > 0 && !want[d.nodeCluster[n.ID]] {
			continue
		}
		// What a node shipped is dated by its newest record, not by when
		// ingest got round to it.
		var rec int64
		if n.LastRecord != nil {
			rec = *n.LastRecord
		}
		last := rec
		if n.LastRecord == nil && n.LastIngest != nil {
			last = *n.LastIngest
		}
		age := time.Duration(now-last) * time.Second
		if o.Forget > 0 && age > o.Forget {
			continue
		}
		nodes++
		if age > o.Stale {
			stale++
			problems = append(problems, fmt.Sprintf("node %s: no data for %s (last record %s)", d.nodeLabel(n.ID, o.Clusters), roundAge(age),
				time.Unix(rec, 0).UTC().Format(time.RFC3339)))
		}
	}
	sort.Strings(problems)
	lastOK, err := d.st.LastGoodPass(ctx)
	if err != nil {
		return nil, "", d.wrap(err)
	}
	switch {
	case lastOK == nil:
		problems = append(problems, "ingest: no successful pass recorded (is gpuacct serve running?)")
	case time.Duration(now-*lastOK)*time.Second > o.Lag:
		problems = append(problems, fmt.Sprintf("ingest: last successful pass %s ago (limit %s): is gpuacct serve running?",
			roundAge(time.Duration(now-*lastOK)*time.Second), o.Lag))
	}
	last, found, err := d.st.LastPass(ctx)
	switch {
	case err != nil:
		return nil, "", d.wrap(err)
	case found && !last.OK && last.Finished != nil:
		msg := strings.TrimSpace(last.Error)
		if msg == "" {
			msg = "no error recorded"
		}
		problems = append(problems, fmt.Sprintf("ingest: last pass at %s failed: %s", time.Unix(last.Started, 0).UTC().Format(time.RFC3339), firstLine(msg)))
	}
	age := "never"
	if lastOK != nil {
		age = roundAge(time.Duration(now-*lastOK)*time.Second).String() + " ago"
	}
	fp, fs, err := d.checkFiles(ctx, o)
	if err != nil {
		return nil, "", err
	}
	problems = append(problems, fp...)
	op, err := d.checkOverAllocation(ctx)
	if err != nil {
		return nil, "", err
	}
	problems = append(problems, op...)
	summary = fmt.Sprintf("%d nodes, %d silent over %s; last good ingest pass %s; %s", nodes, stale, o.Stale, age, fs)
	return problems, summary, nil
}

// maxOverAllocation bounds the job hours check counts over their
// allocation (invariant 9): past it, the line says "more than". Only the
// hours of the newest overAllocJobs job runs are read: check also
// answers the web's health requests, and a ledger of years must not be
// read whole for each.
const (
	maxOverAllocation = 10_000
	overAllocJobs     = 50_000
)

// checkOverAllocation is a problem line when job hours of the ledger hold
// more used, idle or sampled GPU time than was allocated in them, which
// the ledger never should (issue #14's invariant; ingest logs each one
// it makes, with its job and hour).
func (d *Ledger) checkOverAllocation(ctx context.Context) ([]string, error) {
	n, over, err := d.st.CountHourViolations(ctx, overAllocJobs, maxOverAllocation)
	if err != nil {
		return nil, d.wrap(err)
	}
	if n == 0 {
		return nil, nil
	}
	count := fmt.Sprint(n)
	if over {
		count = "more than " + count
	}
	return []string{fmt.Sprintf("ledger: %s job hours (of the newest %d job runs) hold more used, idle or sampled GPU time than was allocated in them: "+
		"a ledger bug; gpuacct serve logs each with its job and hour (\"job hour over its allocation\")", count, overAllocJobs)}, nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

func roundAge(d time.Duration) time.Duration {
	if d > time.Hour {
		return d.Round(time.Minute)
	}
	return d.Round(time.Second)
}
