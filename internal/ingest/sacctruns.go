package ingest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// sacctRunFields are the fields ingest asks sacct for about a job's runs.
const sacctRunFields = "JobIDRaw,Start,End,State,ExitCode"

// sacctRun is one run of a job as Slurm's accounting has it: a requeued job
// has one per run. A zero start or end is sacct's Unknown or None.
type sacctRun struct {
	start, end time.Time
	state      string // lower case, without "+" or " by UID"
	code       *int
	signal     *int
	// submit is when the run was queued (zero: not asked, or Unknown);
	// asked in the reconciling call only.
	submit time.Time
	// resources is what the run used, where the call asked (reconciling).
	resources runResources
}

// passRuns asks sacct about a job's runs at most once a pass: the jobs
// without a start and the unfinished ones, and the parts of a job on
// several nodes, share a job id and so one answer. A job id names a
// different job on each cluster, so answers are kept per cluster. After
// one call fails the pass asks no more (one timeout a pass): every later
// job gets that failure.
type passRuns struct {
	in   *Ingester
	got  map[clusterJob]runsAnswer
	down error
}

// clusterJob is a job id on a cluster.
type clusterJob struct {
	cluster string
	job     uint64
}

// runsAnswer is sacct's answer about a job's runs; failed says the call
// failed (sacct or slurmdbd down, or slow), not its output.
type runsAnswer struct {
	runs   []sacctRun
	err    error
	failed bool
}

func (in *Ingester) newPassRuns() *passRuns {
	return &passRuns{in: in, got: map[clusterJob]runsAnswer{}}
}

// runs asks `sacct -M CLUSTER -j ID -X -D --parsable2 --noheader -o
// JobIDRaw,Start,End,State,ExitCode` within ingest.sacct_timeout, unless
// this pass asked already or a call of this pass failed. Without -D sacct
// lists only a requeued job's latest run.
func (p *passRuns) runs(ctx context.Context, cluster string, job uint64) runsAnswer {
	k := clusterJob{cluster, job}
	if a, ok := p.got[k]; ok {
		return a
	}
	if p.down != nil {
		return runsAnswer{err: fmt.Errorf("not asked after a failed sacct call this pass: %w", p.down), failed: true}
	}
	var a runsAnswer
	out, err := p.in.sacctJobs(ctx, cluster, []uint64{job}, "-X", "-D", "--parsable2", "--noheader", "-o", sacctRunFields)
	if err == nil {
		a.runs, a.err = parseSacctRuns(string(out), job, p.in.d.SacctLocation)
	} else {
		a.err, a.failed, p.down = err, true, err
		p.in.logSlurm("sacct did not answer; no more jobs asked about this pass", err)
	}
	p.got[k] = a
	return a
}

// parseSacctRuns reads the runs of job, in Start order (runs not started
// last, in sacct's order). Lines of other job ids are left out: `-j ID` of
// an array's first task lists the whole array.
func parseSacctRuns(out string, job uint64, loc *time.Location) ([]sacctRun, error) {
	var runs []sacctRun
	for line := range strings.SplitSeq(out, "\n") {
		id, r, ok, err := parseSacctRun(line, loc)
		if err != nil {
			return nil, err
		}
		if ok && id == job {
			runs = append(runs, r)
		}
	}
	sortRuns(runs)
	return runs, nil
}

// parseSacctRunsOf reads the runs of many jobs (one batched call), each
// job's in Start order. A line that does not parse is left out, not the
// answer: it names no job this pass can trust. A step's line (asked
// without -X) follows its run's, so it counts for the run just read when
// it carries that run's job id.
func parseSacctRunsOf(out string, loc *time.Location) map[uint64][]sacctRun {
	res := map[uint64][]sacctRun{}
	var last *sacctRun
	var lastID uint64
	for line := range strings.SplitSeq(out, "\n") {
		if id, f, ok := stepOf(line); ok {
			if last != nil && id == lastID {
				last.resources.addStep(f)
			}
			continue
		}
		last = nil
		if id, r, ok, err := parseSacctRun(line, loc); err == nil && ok {
			res[id] = append(res[id], r)
			last, lastID = &res[id][len(res[id])-1], id
		}
	}
	for _, runs := range res {
		sortRuns(runs)
	}
	return res
}

// parseSacctRun reads one JobIDRaw|Start|End|State|ExitCode line; ok is
// false for a blank line or one of no job id.
func parseSacctRun(line string, loc *time.Location) (uint64, sacctRun, bool, error) {
	line = strings.TrimSpace(line)
	if line == "" {
		return 0, sacctRun{}, false, nil
	}
	f := strings.Split(line, "|")
	if len(f) < 5 {
		return 0, sacctRun{}, false, fmt.Errorf("sacct line %q: want %s", line, strings.ReplaceAll(sacctRunFields, ",", "|"))
	}
	id, err := strconv.ParseUint(strings.TrimSpace(f[0]), 10, 64)
	if err != nil || id == 0 {
		return 0, sacctRun{}, false, nil
	}
	var r sacctRun
	if r.start, err = sacctTime(f[1], loc); err != nil {
		return 0, sacctRun{}, false, fmt.Errorf("sacct start: %w", err)
	}
	if r.end, err = sacctTime(f[2], loc); err != nil {
		return 0, sacctRun{}, false, fmt.Errorf("sacct end: %w", err)
	}
	state, _, _ := strings.Cut(strings.TrimSpace(f[3]), " ") // "CANCELLED by 0"
	r.state = strings.ToLower(strings.TrimSuffix(state, "+"))
	if c, sig, ok := strings.Cut(strings.TrimSpace(f[4]), ":"); ok {
		if v, err := strconv.Atoi(c); err == nil {
			r.code = &v
		}
		if v, err := strconv.Atoi(sig); err == nil {
			r.signal = &v
		}
	}
	r.resources = parseRunResources(f[5:])
	if len(f) > sacctSubmitAt {
		// A Submit that does not parse is no submit, not a bad line: the
		// run's times stand without it.
		r.submit, _ = sacctTime(f[sacctSubmitAt], loc)
	}
	return id, r, true, nil
}

// sortRuns orders runs by Start, the ones not started last.
func sortRuns(runs []sacctRun) {
	slices.SortStableFunc(runs, func(a, b sacctRun) int {
		switch {
		case a.start.IsZero() && b.start.IsZero():
			return 0
		case a.start.IsZero():
			return 1
		case b.start.IsZero():
			return -1
		}
		return a.start.Compare(b.start)
	})
}

// sacctTime parses sacct's local time stamp; Unknown and None are zero.
func sacctTime(s string, loc *time.Location) (time.Time, error) {
	switch s = strings.TrimSpace(s); s {
	case "", "Unknown", "None":
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation("2006-01-02T15:04:05", s, loc)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q: %w", s, err)
	}
	return t, nil
}

// runSlack is how far a run's Start (End) in sacct may lie from the start
// (end) a node's hook recorded for it: the hooks run a moment after
// Slurm's start and end.
const runSlack = 10 * time.Minute

// pickRun is the run of the job node's restart count and the run after it,
// if listed. Slurm keeps no restart count per record: a requeued job's runs,
// in Start order, are restarts 0, 1, ... That run is taken if at (its Start
// or End) lies within runSlack of known (what the node's hook recorded),
// else the run nearest to known within runSlack: a job id that Slurm gave
// again (past MaxJobId, or a rebuilt controller) lists an older job's runs
// too. None within runSlack: no match. A zero known takes the restart's.
func pickRun(runs []sacctRun, restart int, known time.Time, at func(sacctRun) time.Time) (run sacctRun, next *sacctRun, ok bool) {
	near := func(i int) (time.Duration, bool) {
		if runs[i].start.IsZero() {
			return 0, false
		}
		if known.IsZero() {
			return 0, true
		}
		t := at(runs[i])
		d := t.Sub(known).Abs()
		return d, !t.IsZero() && d <= runSlack
	}
	pick := -1
	if restart >= 0 && restart < len(runs) {
		if _, ok := near(restart); ok {
			pick = restart
		}
	}
	if pick < 0 && !known.IsZero() {
		var best time.Duration
		for i := range runs {
			if d, ok := near(i); ok && (pick < 0 || d < best) {
				pick, best = i, d
			}
		}
	}
	if pick < 0 {
		return sacctRun{}, nil, false
	}
	if pick+1 < len(runs) && !runs[pick+1].start.IsZero() {
		next = &runs[pick+1]
	}
	return runs[pick], next, true
}

func runStart(r sacctRun) time.Time { return r.start }

func runEnd(r sacctRun) time.Time { return r.end }
