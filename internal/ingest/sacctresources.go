package ingest

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// sacctResourceFields follow sacctRunFields in the reconciling call: what a
// run used of its allocation. Asked without -X, sacct lists each run's
// steps after it; the run's own line then sums the steps' TotalCPU, and
// the steps carry MaxRSS.
// AllocTRES carries Slurm's billing of the run (billing=N, billing.go).
// Submit comes last, so that an answer without it still parses: it is
// when the run was queued, the start of its wait (store.Waits).
const sacctResourceFields = sacctRunFields + ",AllocCPUS,TotalCPU,ReqMem,MaxRSS,TimelimitRaw,ElapsedRaw,NNodes,AllocTRES,Submit"

// sacctSubmitAt is Submit's place in a line of sacctResourceFields.
const sacctSubmitAt = 13

// runResources is what sacct's lines say of a run's resources: its own line
// (job) and its steps' (rss, gathered).
type runResources struct {
	job      bool    // the run's line gave AllocCPUS, ElapsedRaw and NNodes
	billing  float64 // AllocTRES' billing=N, where billed
	billed   bool
	cpus     int64
	nodes    int64
	elapsed  int64 // seconds
	limit    store.Figure
	reqMem   store.Figure // bytes per node
	totalCPU int64        // milliseconds, over the steps
	// rss is the highest MaxRSS of a step; gathered says a step reported
	// one above 0: without a gather plugin (jobacct_gather/none) steps
	// report 0 or nothing, and TotalCPU is then no measure either.
	rss      int64
	gathered bool
}

// parseRunResources reads the fields after sacctRunFields of a run's line:
// AllocCPUS|TotalCPU|ReqMem|MaxRSS|TimelimitRaw|ElapsedRaw|NNodes. A line
// without them, or with ones that do not parse, gives no resources.
func parseRunResources(f []string) runResources {
	if len(f) < 7 {
		return runResources{}
	}
	var u runResources
	var err error
	if u.cpus, err = strconv.ParseInt(strings.TrimSpace(f[0]), 10, 64); err != nil {
		return runResources{}
	}
	if u.elapsed, err = strconv.ParseInt(strings.TrimSpace(f[5]), 10, 64); err != nil {
		return runResources{}
	}
	if u.nodes, err = strconv.ParseInt(strings.TrimSpace(f[6]), 10, 64); err != nil {
		return runResources{}
	}
	if ms, ok := sacctCPUTime(f[1]); ok {
		u.totalCPU = ms
	}
	u.reqMem = reqMemPerNode(f[2], u.cpus, u.nodes)
	if m, err := strconv.ParseInt(strings.TrimSpace(f[4]), 10, 64); err == nil && m >= 0 {
		u.limit = store.Known(m * 60)
	}
	if len(f) > 7 {
		u.billing, u.billed = slurmBilling(f[7])
	}
	u.job = true
	return u
}

// addStep takes a step's line (its fields after sacctRunFields) into the
// run's resources: the highest MaxRSS.
func (u *runResources) addStep(f []string) {
	if len(f) < 4 {
		return
	}
	if b, ok := sacctBytes(f[3], 'K'); ok && b > 0 {
		u.rss = max(u.rss, b)
		u.gathered = true
	}
}

// resources is the run's resources as the ledger keeps it; false when the run's
// line gave none.
func (u runResources) resources() (store.Resources, bool) {
	if !u.job {
		return store.Resources{}, false
	}
	s := store.Resources{AllocCPUs: u.cpus, Nodes: u.nodes, Elapsed: time.Duration(u.elapsed) * time.Second, TimeLimit: u.limit, ReqMem: u.reqMem}
	if u.gathered {
		s.TotalCPU, s.MaxRSS = store.Known(u.totalCPU), store.Known(u.rss)
	}
	return s, true
}

// reqMemPerNode normalises sacct's ReqMem to bytes per node. Slurm 21.08
// and later print the job's total (its TRES mem: per node × nodes, or per
// CPU × CPUs) with a unit, e.g. "16G"; older ones per node ("4000Mn") or
// per CPU ("4000Mc"). "0" or nothing: no memory asked.
func reqMemPerNode(s string, cpus, nodes int64) store.Figure {
	s = strings.TrimSpace(s)
	per := byte(0)
	if n := len(s); n > 0 && (s[n-1] == 'n' || s[n-1] == 'c') {
		per, s = s[n-1], s[:n-1]
	}
	b, ok := sacctBytes(s, 'M')
	if !ok || b <= 0 || nodes <= 0 {
		return store.Figure{}
	}
	switch per {
	case 'n':
		return store.Known(b)
	case 'c':
		return store.Known(b * cpus / nodes)
	}
	return store.Known(b / nodes)
}

// sacctBytes parses one of sacct's sizes: a number with an optional
// K/M/G/T/P suffix (powers of 1024), unit when it has none ("0", or
// --noconvert's bare numbers). "" is no figure.
func sacctBytes(s string, unit byte) (int64, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, false
	}
	if c := s[len(s)-1]; c < '0' || c > '9' {
		unit, s = c, s[:len(s)-1]
	}
	shift := strings.IndexByte("KMGTP", unit)
	if shift < 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false
	}
	b := v * math.Pow(1024, float64(shift+1))
	if b >= math.MaxInt64 {
		return 0, false
	}
	return int64(math.Round(b)), true
}

// sacctCPUTime parses sacct's TotalCPU, [D-][HH:]MM:SS[.mmm], into
// milliseconds.
func sacctCPUTime(s string) (int64, bool) {
	s = strings.TrimSpace(s)
	var days int64
	if d, rest, ok := strings.Cut(s, "-"); ok {
		v, err := strconv.ParseInt(d, 10, 64)
		if err != nil || v < 0 {
			return 0, false
		}
		days, s = v, rest
	}
	var ms int64
	if sec, frac, ok := strings.Cut(s, "."); ok {
		if len(frac) == 0 || len(frac) > 3 {
			return 0, false
		}
		v, err := strconv.ParseInt(frac+strings.Repeat("0", 3-len(frac)), 10, 64)
		if err != nil || v < 0 {
			return 0, false
		}
		ms, s = v, sec
	}
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, false
	}
	var secs int64
	for i, p := range parts {
		v, err := strconv.ParseInt(p, 10, 64)
		if err != nil || v < 0 || i > 0 && v >= 60 {
			return 0, false
		}
		secs = secs*60 + v
	}
	return ((days*24*3600)+secs)*1000 + ms, true
}

// stepOf is the job id of a step's line (JobIDRaw "ID.batch", "ID.0",
// "ID.extern") and its fields after sacctRunFields.
func stepOf(line string) (uint64, []string, bool) {
	f := strings.Split(strings.TrimSpace(line), "|")
	id, _, ok := strings.Cut(f[0], ".")
	if !ok || len(f) < 5 {
		return 0, nil, false
	}
	v, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return v, f[5:], true
}
