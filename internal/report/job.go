package report

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// NodePart is a job's part on one node: the ledger's row, with the
// node's name for its id.
type NodePart struct {
	Node string `json:"node"`
	store.JobNodeRow
}

// GPUStat is one GPU of a job: the agent's aggregate, or figures from the
// samples when the job still runs or no aggregate arrived.
type GPUStat struct {
	Node        string            `json:"node"`
	Index       *int64            `json:"index,omitempty"`
	Minor       *int64            `json:"minor,omitempty"`
	UUID        string            `json:"uuid"`
	Model       string            `json:"model,omitempty"`
	Source      string            `json:"source"` // aggregate, samples or none
	SampleS     float64           `json:"sample_s"`
	UtilMean    *float64          `json:"util_mean_pct,omitempty"`
	UtilMax     *float64          `json:"util_max_pct,omitempty"`
	MemMaxMiB   *float64          `json:"mem_max_mib,omitempty"`
	MemTotalMiB *float64          `json:"mem_total_mib,omitempty"`
	EnergyKWh   *float64          `json:"energy_kwh,omitempty"`
	IdleS       float64           `json:"idle_s"`
	Quality     map[string]uint64 `json:"quality,omitempty"`
	// PowerMeanW is EnergyMJ over SampleS (oneEnergy), PowerPeakW the
	// samples' highest power draw inside the job's allocation; Metrics
	// the chosen ones (agent.metrics).
	PowerMeanW *float64     `json:"power_mean_w,omitempty"`
	PowerPeakW *float64     `json:"power_peak_w,omitempty"`
	Metrics    []MetricStat `json:"metrics,omitempty"`
	// EnergyMJ is the GPU's part of the job's energy (oneEnergy): the
	// GPUs' add up to the job's exactly.
	EnergyMJ int64   `json:"energy_mj,omitempty"`
	Series   []Point `json:"-"`
	gpuID    int64
}

// Detail is everything `gpuacct job` shows.
type Detail struct {
	Job   JobRow
	Nodes []NodePart
	GPUs  []GPUStat
	Notes []string
	// Events are the GPU events of the job's GPUs (EventNotes says them).
	Events []GPUEvent
	Now    time.Time
}

// ErrNoJob means the job is not in the ledger.
var ErrNoJob = errors.New("job not found")

// JobSpec names a job as users type it: 1234, 1234_7 (array task),
// 1234+1 (second run after a requeue).
type JobSpec struct {
	ID int64
	// Task is the array task when the job was named ARRAYID_TASK.
	Task *int64
	// Restart is the run; -1 means the latest.
	Restart int
}

// ParseJobSpec reads 1234, 1234_7 or 1234+1.
func ParseJobSpec(s string) (JobSpec, error) {
	sp := JobSpec{Restart: -1}
	rest := s
	if a, r, ok := strings.Cut(rest, "+"); ok {
		n, err := strconv.Atoi(r)
		if err != nil || n < 0 {
			return sp, fmt.Errorf("job %q: run after %q is not a number (1234+1 is the first requeue)", s, "+")
		}
		sp.Restart, rest = n, a
	}
	if a, t, ok := strings.Cut(rest, "_"); ok {
		n, err := strconv.ParseInt(t, 10, 64)
		if err != nil || n < 0 {
			return sp, fmt.Errorf("job %q: array task %q is not a number", s, t)
		}
		sp.Task, rest = &n, a
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	if err != nil || id <= 0 {
		return sp, fmt.Errorf("job %q is not a Slurm job id such as 1234, 1234_7 or 1234+1", s)
	}
	sp.ID = id
	return sp, nil
}

func (sp JobSpec) String() string {
	s := strconv.FormatInt(sp.ID, 10)
	if sp.Task != nil {
		s += "_" + strconv.FormatInt(*sp.Task, 10)
	}
	if sp.Restart >= 0 {
		s += "+" + strconv.Itoa(sp.Restart)
	}
	return s
}

// JobIn loads one job run from the scope's clusters: the one cluster
// that has it, or BadInput naming the clusters when several have the id
// (Slurm's job ids are per cluster).
func (d *Ledger) JobIn(ctx context.Context, s Scope, sp JobSpec, now time.Time) (*Detail, error) {
	r, err := d.jobRunIn(ctx, s, sp)
	if err != nil {
		return nil, err
	}
	return d.detail(ctx, &r, now)
}

// JobCluster is the cluster in the scope that has the job run, found as
// JobIn finds it but without reading its nodes, GPUs and samples.
func (d *Ledger) JobCluster(ctx context.Context, s Scope, sp JobSpec) (string, error) {
	r, err := d.jobRunIn(ctx, s, sp)
	if err != nil {
		return "", err
	}
	return r.Cluster, nil
}

// jobRunIn finds the job run's row in the scope's clusters, with JobIn's
// errors.
func (d *Ledger) jobRunIn(ctx context.Context, s Scope, sp JobSpec) (JobRow, error) {
	if len(s.Clusters) <= 1 {
		r, err := d.jobRun(ctx, strings.Join(s.Clusters, ""), sp)
		if errors.Is(err, ErrNoJob) && len(s.Known) > 1 {
			// It may be another cluster's: say which was searched.
			return r, fmt.Errorf("job %s: %w on cluster %s in %s (its clusters: %s; -M NAME picks)", sp, ErrNoJob, s.Clusters[0], d.path, strings.Join(s.Known, ", "))
		}
		return r, err
	}
	var found JobRow
	var on []string
	for _, c := range s.Clusters {
		r, err := d.st.Run(ctx, store.RunQuery{JobID: sp.ID, Task: sp.Task, Clusters: []string{c}, Cluster: c, Restart: sp.Restart})
		switch {
		case errors.Is(err, store.ErrNotFound):
		case err != nil:
			return found, d.wrap(err)
		default:
			on = append(on, c)
			found = r
		}
	}
	switch len(on) {
	case 0:
		return found, fmt.Errorf("job %s: %w in %s (clusters %s)", sp, ErrNoJob, d.path, strings.Join(s.Clusters, ", "))
	case 1:
		return found, nil
	}
	return found, badInput("job %s is on clusters %s: choose with -M NAME", sp, strings.Join(on, ", "))
}

// Job loads one job run on the cluster ("" for any): JobIn with a scope
// of that one cluster.
func (d *Ledger) Job(ctx context.Context, cluster string, sp JobSpec, now time.Time) (*Detail, error) {
	return d.JobIn(ctx, Scope{Clusters: []string{cluster}}, sp, now)
}

// jobRun reads the job run's row on the cluster ("" for any).
func (d *Ledger) jobRun(ctx context.Context, cluster string, sp JobSpec) (JobRow, error) {
	// Naming every cluster lets the store use the jobs table's index.
	clusters := d.clusters
	if cluster != "" {
		clusters = []string{cluster}
	}
	r, err := d.st.Run(ctx, store.RunQuery{JobID: sp.ID, Task: sp.Task, Clusters: clusters, Cluster: cluster, Restart: sp.Restart})
	if errors.Is(err, store.ErrNotFound) {
		return r, fmt.Errorf("job %s: %w in %s", sp, ErrNoJob, d.path)
	}
	if err != nil {
		return r, d.wrap(err)
	}
	return r, nil
}

// detail reads the rest of a job run: its nodes, GPUs and notes.
func (d *Ledger) detail(ctx context.Context, r *JobRow, now time.Time) (*Detail, error) {
	det := &Detail{Now: now, Job: *r}
	parts, err := d.st.JobNodes(ctx, r.Row)
	if err != nil {
		return nil, d.wrap(err)
	}
	for _, n := range parts {
		det.Nodes = append(det.Nodes, NodePart{Node: d.nodeNames[n.NodeID], JobNodeRow: n})
	}
	if err := d.loadGPUs(ctx, det); err != nil {
		return nil, err
	}
	if err := d.loadMetrics(ctx, det); err != nil {
		return nil, err
	}
	det.Notes = notes(det)
	if err := d.addSliceNotes(ctx, det); err != nil {
		return nil, err
	}
	return det, nil
}

func (d *Ledger) loadGPUs(ctx context.Context, det *Detail) error {
	j := &det.Job
	gpus, err := d.st.JobGPUs(ctx, j.Row)
	if err != nil {
		return d.wrap(err)
	}
	for _, r := range gpus {
		g := GPUStat{gpuID: r.GPUID, UUID: r.UUID, Model: r.Model}
		g.Node, g.Index, g.Minor, g.MemTotalMiB = d.nodeNames[r.NodeID], r.Index, r.Minor, r.MemTotalMiB
		g.Source = "none"
		if r.AggSeq != nil {
			g.Source = "aggregate"
			g.SampleS, g.IdleS, g.UtilMax, g.MemMaxMiB = r.SampleS, r.IdleS, r.UtilMax, r.MemMaxMiB
			if r.SampleS > 0 {
				m := 100 * r.UtilS / r.SampleS
				g.UtilMean = &m
			}
			if r.EnergyMJ != nil {
				k := float64(*r.EnergyMJ) / 3.6e9
				g.EnergyKWh = &k
			}
			if r.Quality != "" {
				_ = json.Unmarshal([]byte(r.Quality), &g.Quality)
			}
		}
		if g.EnergyKWh == nil && r.EnergyStartMJ != nil && r.EnergyEndMJ != nil && *r.EnergyEndMJ >= *r.EnergyStartMJ {
			k := float64(*r.EnergyEndMJ-*r.EnergyStartMJ) / 3.6e9
			g.EnergyKWh = &k
		}
		det.GPUs = append(det.GPUs, g)
	}
	from := j.Start * 1000
	to := det.Now.UnixMilli()
	allocEnd := int64(math.MaxInt64) // a running job's samples run on (store: use.go)
	if j.End != nil {
		to = *j.End*1000 + 1
		allocEnd = *j.End * 1000
	}
	return d.loadSeries(ctx, det, from, to, allocEnd)
}

// Sparkline draws values 0..100 in width cells with the eight block
// heights; a cell with no sample is a space.
func Sparkline(pts []Point, from, to int64, width int) string {
	if width <= 0 || to <= from {
		return ""
	}
	sum := make([]float64, width)
	n := make([]float64, width)
	for _, p := range pts {
		if p.Util == nil {
			continue
		}
		i := int((p.T - from) * int64(width) / (to - from))
		if i < 0 || i >= width {
			continue
		}
		sum[i] += *p.Util
		n[i]++
	}
	const bars = "▁▂▃▄▅▆▇█"
	r := []rune(bars)
	var b strings.Builder
	for i := range sum {
		if n[i] == 0 {
			b.WriteByte(' ')
			continue
		}
		v := sum[i] / n[i]
		k := int(v / 100 * float64(len(r)))
		k = min(max(k, 0), len(r)-1)
		b.WriteRune(r[k])
	}
	return b.String()
}

func pct(v float64) string { return strconv.FormatFloat(v, 'f', 0, 64) + "%" }

// idleUtil is the utilization (percent) under which the agent counts a
// GPU idle (agent.idle_threshold's default): a GPU that never reached it
// was never busy.
const idleUtil = 1.0

// plural is "1 GPU", "2 GPUs".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}

// notes are the plain-language findings, most useful first.
func notes(det *Detail) []string {
	j := &det.Job
	var out []string
	elapsed := j.Elapsed(det.Now)
	if j.Ignored {
		out = append(out, strings.TrimSuffix("Excluded from reports: "+j.Reason(), ": ")+".")
	}
	if j.EndEstimated {
		out = append(out, "The end time is estimated (no epilog record arrived; closed at the last sample). Allocation may be short.")
	}
	if j.End == nil {
		out = append(out, "Still running: figures are up to the latest samples.")
	}
	var withData, idleGPUs []GPUStat
	for _, g := range det.GPUs {
		if g.SampleS > 0 {
			withData = append(withData, g)
		}
	}
	if len(det.GPUs) > 0 && len(withData) == 0 {
		out = append(out, fmt.Sprintf("No utilization samples for this job: is gpuacct agent running on %s? (raw samples are kept for store.sample_retention)", j.Nodes))
		return out
	}
	for _, g := range withData {
		if g.IdleS/g.SampleS >= 0.5 {
			idleGPUs = append(idleGPUs, g)
		}
	}
	several := len(det.Nodes) > 1
	switch {
	case len(idleGPUs) > 0 && len(idleGPUs) == len(withData):
		out = append(out, allIdleNote(det, idleGPUs, several))
	case len(idleGPUs) > 0:
		for _, g := range idleGPUs {
			out = append(out, fmt.Sprintf("GPU %s on %s was idle %s of the job: request fewer GPUs (--gpus=%d).",
				gpuName(g), g.Node, idleShare(g), int(j.GPUs)-len(idleGPUs)))
		}
	}
	var mean, n float64
	var memMax, memTotal float64
	for _, g := range withData {
		if g.UtilMean != nil {
			mean += *g.UtilMean
			n++
		}
		if g.MemMaxMiB != nil && g.MemTotalMiB != nil && *g.MemTotalMiB > 0 {
			memMax = max(memMax, *g.MemMaxMiB)
			memTotal = *g.MemTotalMiB
		}
	}
	if n > 0 {
		mean /= n
		if mean < 30 && len(idleGPUs) < len(withData) {
			out = append(out, fmt.Sprintf("Mean GPU utilization was %s: the GPUs mostly waited. Look at data loading (more DataLoader workers, faster storage than NFS) or CPU-side work.", pct(mean)))
		}
	}
	if memTotal > 0 {
		r := memMax / memTotal
		switch {
		case r >= 0.95:
			out = append(out, fmt.Sprintf("GPU memory peaked at %s of %.0f GiB: close to out-of-memory.", pct(100*r), memTotal/1024))
		case r < 0.25 && memMax > 0:
			out = append(out, fmt.Sprintf("Peak GPU memory was %.1f of %.0f GiB (%s): a smaller GPU or a MIG slice would do.", memMax/1024, memTotal/1024, pct(100*r)))
		}
	}
	alloc := float64(j.AllocS)
	if alloc > 0 && j.SampleS > 0 && j.SampleS < 0.8*alloc {
		out = append(out, fmt.Sprintf("Samples cover only %s of the allocated GPU-time: figures are a lower bound.", pct(100*j.SampleS/alloc)))
	}
	if j.State == "failed" && elapsed < 300 {
		out = append(out, fmt.Sprintf("Failed after %s: look at the job's output before resubmitting.", time.Duration(elapsed)*time.Second))
	}
	out = append(out, qualityNotes(withData)...)
	if len(out) == 0 {
		out = append(out, "Nothing to improve found: the GPUs were busy.")
	}
	return out
}

// idleShare is the part of a GPU's sampled time it was idle.
func idleShare(g GPUStat) string { return pct(100 * g.IdleS / g.SampleS) }

// allIdleNote is the note of a job whose every sampled GPU was idle most
// of the time: each GPU's own share, and why. A GPU that was busy for a
// while and idle from then to the end is not a job that missed CUDA: its
// work stopped (for a failed job, most likely when it failed).
func allIdleNote(det *Detail, idle []GPUStat, several bool) string {
	j := &det.Job
	var shares []string
	same := true
	for _, g := range idle {
		same = same && idleShare(g) == idleShare(idle[0])
		name := "GPU " + gpuName(g)
		if several {
			name += " on " + g.Node
		}
		shares = append(shares, name+" "+idleShare(g))
	}
	what := "All " + plural(len(idle), "GPU", "GPUs") + " were"
	switch len(idle) {
	case 1:
		what = "The GPU was"
	case 2:
		what = "Both GPUs were"
	}
	share := idleShare(idle[0]) + " of sampled time"
	switch {
	case len(idle) > 1 && same:
		share = "each " + share
	case len(idle) > 1:
		share = strings.Join(shares, ", ") + " of sampled time"
	}
	busy := false
	until := int64(0)
	for _, g := range idle {
		if g.UtilMax != nil && *g.UtilMax >= idleUtil {
			busy = true
		}
		until = max(until, busyUntil(g.Series))
	}
	end := det.Now.UnixMilli()
	if j.End != nil {
		end = *j.End * 1000
	}
	start := j.Start * 1000
	if !busy {
		return fmt.Sprintf("%s idle most of the job (%s): the job may not use the GPU at all; check that the code runs on CUDA.", what, share)
	}
	if until > start && until < end {
		into := time.Duration((until-start)/1000) * time.Second
		frac := pct(100 * float64(until-start) / float64(end-start))
		if j.State == "failed" {
			return fmt.Sprintf("%s idle most of the job (%s): busy for its first %s (%s), then idle until it failed: look at the job's output from then on.", what, share, into, frac)
		}
		return fmt.Sprintf("%s idle most of the job (%s): busy for its first %s (%s), then idle until its end: end the job when its GPU work is done, or run what follows without GPUs.", what, share, into, frac)
	}
	return fmt.Sprintf("%s idle most of the job (%s), busy only at times: look at what the job waits for between its GPU steps.", what, share)
}

// busyUntil is the end (Unix ms) of the last point of a series at or
// above idleUtil, 0 if none.
func busyUntil(pts []Point) int64 {
	for i := len(pts) - 1; i >= 0; i-- {
		if p := pts[i]; p.Util != nil && *p.Util >= idleUtil {
			return p.T + int64(p.Interval*1000)
		}
	}
	return 0
}

// qualityNotes are the GPUs' quality counts in plain words: one line per
// reason a metric was missing (a lost GPU misses every metric for the same
// reason), naming the metrics and the GPUs, then other counts.
func qualityNotes(gpus []GPUStat) []string {
	type missing struct {
		metrics []string
		gpus    []string
		seen    map[string]bool
	}
	byReason := map[string]*missing{}
	var reasons, out []string
	for _, g := range gpus {
		keys := make([]string, 0, len(g.Quality))
		for k := range g.Quality {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		most := map[string]uint64{}
		var order []string
		for _, k := range keys {
			metric, reason, ok := strings.Cut(k, ": ")
			if !ok {
				if k == "energy_counter_reset" {
					out = append(out, fmt.Sprintf("GPU %s on %s: its energy counter was reset %s (counted from 0 after).", gpuName(g), g.Node, plural(int(g.Quality[k]), "time", "times")))
				} else {
					out = append(out, fmt.Sprintf("GPU %s on %s: %s (%s).", gpuName(g), g.Node, k, plural(int(g.Quality[k]), "sample", "samples")))
				}
				continue
			}
			m := byReason[reason]
			if m == nil {
				m = &missing{seen: map[string]bool{}}
				byReason[reason] = m
				reasons = append(reasons, reason)
			}
			if !m.seen[metric] {
				m.seen[metric] = true
				m.metrics = append(m.metrics, metric)
			}
			if _, ok := most[reason]; !ok {
				order = append(order, reason)
			}
			most[reason] = max(most[reason], g.Quality[k])
		}
		for _, r := range order {
			byReason[r].gpus = append(byReason[r].gpus, fmt.Sprintf("GPU %s on %s (%s)", gpuName(g), g.Node, plural(int(most[r]), "sample", "samples")))
		}
	}
	sort.Strings(reasons)
	var lines []string
	for _, r := range reasons {
		m := byReason[r]
		sort.Strings(m.metrics)
		lines = append(lines, fmt.Sprintf("%s lacked %s: %s.", strings.Join(m.gpus, ", "), strings.Join(m.metrics, ", "), r))
	}
	return append(lines, out...)
}

func gpuName(g GPUStat) string {
	if g.Index != nil {
		return strconv.FormatInt(*g.Index, 10)
	}
	if len(g.UUID) > 12 {
		return g.UUID[:12]
	}
	return g.UUID
}
