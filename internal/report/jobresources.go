package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/store"
)

// notRecorded is what a figure the job accounting gather did not measure
// reads: never 0, which would say the job used nothing.
const notRecorded = "not recorded (JobAcctGatherType is none)"

// RunResources is a job run's use of its CPUs, host memory and time limit as
// sacct has it, with seff's shares and what to ask for next time; a
// figure null in JSON was not recorded (TimeLimitS: no limit, ReqMemBytes:
// no --mem).
type RunResources struct {
	AllocCPUs   int64    `json:"alloc_cpus"`
	Nodes       int64    `json:"nodes"`
	ElapsedS    int64    `json:"elapsed_s"`
	TimeLimitS  *int64   `json:"time_limit_s"`
	ReqMemBytes *int64   `json:"req_mem_bytes_per_node"`
	TotalCPUS   *float64 `json:"total_cpu_s"`
	MaxRSSBytes *int64   `json:"max_rss_bytes"`
	CPUPct      *float64 `json:"cpu_efficiency_pct"`
	MemPct      *float64 `json:"mem_efficiency_pct"`
	TimePct     *float64 `json:"time_efficiency_pct"`
	// GPUMemPct is the highest GPU memory peak of the job's GPUs, of that
	// GPU's memory.
	GPUMemPct *float64 `json:"gpu_mem_peak_pct"`
	// NotRecorded says why the CPU time or peak RSS is null.
	NotRecorded string `json:"not_recorded,omitempty"`
	// Suggestions are the plain words gpuacct job prints.
	Suggestions []string `json:"suggestions"`

	// The lines' suggestions, by figure, for the text.
	cpuTip, memTip, timeTip, gpuTip string
}

// Resources is what sacct gave for j's run, nil when it gave none (a
// running job, a ledger older than job_resources).
func (d *Ledger) Resources(ctx context.Context, j *JobRow) (*store.Resources, error) {
	v, err := d.st.Version(ctx)
	if err != nil {
		return nil, d.wrap(err)
	}
	if v < store.ResourcesSchema {
		return nil, nil
	}
	us, err := d.st.Resources(ctx, []int64{j.Row})
	if err != nil {
		return nil, d.wrap(err)
	}
	u, ok := us[j.Row]
	if !ok {
		return nil, nil
	}
	return &u, nil
}

// RunResourcesOf is what sacct gave for det's run (Resources) as gpuacct
// job and the job page show it (ResourcesOf); nil when sacct gave none.
func (d *Ledger) RunResourcesOf(ctx context.Context, det *Detail) (*RunResources, error) {
	u, err := d.Resources(ctx, &det.Job)
	if err != nil || u == nil {
		return nil, err
	}
	r := ResourcesOf(*u, det)
	return &r, nil
}

// ResourcesOf is u's figures as gpuacct job and the job page show them, with
// the GPUs' memory peaks and idle shares of det.
func ResourcesOf(u store.Resources, det *Detail) RunResources {
	e := u.Efficiency()
	r := RunResources{AllocCPUs: u.AllocCPUs, Nodes: u.Nodes, ElapsedS: int64(u.Elapsed / time.Second), Suggestions: []string{}}
	share := func(x store.Ratio) *float64 {
		if !x.Known {
			return nil
		}
		return rounded(table.UnitPercent, 100*x.Value)
	}
	r.CPUPct, r.MemPct, r.TimePct = share(e.CPU), share(e.Memory), share(e.Time)
	if u.TimeLimit.Known {
		r.TimeLimitS = &u.TimeLimit.Value
	}
	if u.ReqMem.Known {
		r.ReqMemBytes = &u.ReqMem.Value
	}
	if u.MaxRSS.Known {
		r.MaxRSSBytes = &u.MaxRSS.Value
	}
	if u.TotalCPU.Known {
		r.TotalCPUS = rounded(table.UnitSeconds, float64(u.TotalCPU.Value)/1000)
	}
	if !u.TotalCPU.Known || !u.MaxRSS.Known {
		r.NotRecorded = "JobAcctGatherType is none"
	}
	ask := u.Ask()
	if ask.Cores > 0 {
		r.cpuTip = fmt.Sprintf("%s would do (%.1f busy + 20 %%)", plural(int(ask.Cores), "core", "cores"), ask.Busy)
	}
	if ask.Mem != "" {
		r.memTip = fmt.Sprintf("--mem=%s would do (peak %s + 20 %%)", ask.Mem, bytesText(u.MaxRSS.Value))
	}
	if ask.Time != "" {
		r.timeTip = "--time=" + ask.Time + " would do"
	}
	r.GPUMemPct, r.gpuTip = gpuFigures(det)
	for _, s := range []string{r.cpuTip, r.memTip, r.timeTip, r.gpuTip} {
		if s != "" {
			r.Suggestions = append(r.Suggestions, s)
		}
	}
	return r
}

// gpuFigures are the highest GPU memory peak of its GPU's memory and, when
// some of the job's GPUs were idle most of the time (the notes' measure)
// and some not, how many would do.
func gpuFigures(det *Detail) (*float64, string) {
	var peak *float64
	var idle []GPUStat
	busy := 0
	for _, g := range det.GPUs {
		if g.MemMaxMiB != nil && g.MemTotalMiB != nil && *g.MemTotalMiB > 0 {
			p := 100 * *g.MemMaxMiB / *g.MemTotalMiB
			if peak == nil || p > *peak {
				peak = &p
			}
		}
		if g.SampleS <= 0 {
			continue
		}
		if g.IdleS/g.SampleS >= 0.5 {
			idle = append(idle, g)
		} else {
			busy++
		}
	}
	if peak != nil {
		peak = rounded(table.UnitPercent, *peak)
	}
	if len(idle) == 0 || busy == 0 {
		return peak, ""
	}
	return peak, fmt.Sprintf("%s would do: %s %s idle", plural(busy, "GPU", "GPUs"), gpuList(det, idle),
		map[bool]string{true: "was", false: "were"}[len(idle) == 1])
}

// gpuList names the idle GPUs: "GPUs 1–3" for a run of indexes on one
// node, the names otherwise, with their nodes when the job has several.
func gpuList(det *Detail, idle []GPUStat) string {
	one := true
	for _, g := range det.GPUs {
		one = one && g.Node == det.GPUs[0].Node
	}
	names := make([]string, len(idle))
	var idx []int64
	for i, g := range idle {
		names[i] = gpuName(g)
		if !one {
			names[i] += " on " + g.Node
		}
		if g.Index != nil && one {
			idx = append(idx, *g.Index)
		}
	}
	word := "GPU "
	if len(idle) > 1 {
		word = "GPUs "
	}
	if len(idx) == len(idle) && len(idx) > 2 && idx[len(idx)-1]-idx[0] == int64(len(idx)-1) {
		return fmt.Sprintf("%s%d–%d", word, idx[0], idx[len(idx)-1])
	}
	return word + strings.Join(names, ", ")
}

// bytesText is a size in GiB, MiB under one.
func bytesText(b int64) string {
	if b >= 1<<30 {
		return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30))
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// ResourceLine is one figure of a run's resources in words, and what to ask for
// next time ("" when the figure is not far off).
type ResourceLine struct {
	What, Figure, Tip string
}

// Lines are r's figures as gpuacct job and the job page say them: CPU,
// memory, time, the GPUs' memory when samples gave it, and the GPUs
// when some were idle.
func (r *RunResources) Lines() []ResourceLine {
	sec := func(s float64) string { return (time.Duration(math.Round(s)) * time.Second).String() }
	cpu := notRecorded
	if r.CPUPct != nil {
		cpu = fmt.Sprintf("%s of %s (CPU time %s of %s)", pct(*r.CPUPct), plural(int(r.AllocCPUs), "core", "cores"), sec(*r.TotalCPUS),
			sec(float64(r.AllocCPUs*r.ElapsedS)))
	} else if r.TotalCPUS != nil {
		cpu = fmt.Sprintf("CPU time %s on %s", sec(*r.TotalCPUS), plural(int(r.AllocCPUs), "core", "cores"))
	}
	mem := notRecorded
	switch {
	case r.MemPct != nil:
		mem = fmt.Sprintf("peak %s of %s per node (%s)", bytesText(*r.MaxRSSBytes), bytesText(*r.ReqMemBytes), pct(*r.MemPct))
	case r.MaxRSSBytes != nil:
		mem = fmt.Sprintf("peak %s (no memory asked for)", bytesText(*r.MaxRSSBytes))
	}
	tm := fmt.Sprintf("%s, no limit", sec(float64(r.ElapsedS)))
	if r.TimePct != nil {
		tm = fmt.Sprintf("%s of %s limit (%s)", sec(float64(r.ElapsedS)), sec(float64(*r.TimeLimitS)), pct(*r.TimePct))
	}
	out := []ResourceLine{{"CPU efficiency", cpu, r.cpuTip}, {"memory", mem, r.memTip}, {"time", tm, r.timeTip}}
	if r.GPUMemPct != nil {
		out = append(out, ResourceLine{What: "GPU memory", Figure: "peak " + pct(*r.GPUMemPct) + " of the GPU's memory"})
	}
	if r.gpuTip != "" {
		out = append(out, ResourceLine{What: "GPUs", Tip: r.gpuTip})
	}
	return out
}

// WriteJobResourcesText writes the section gpuacct job gains for a run sacct
// gave resources for; nothing for nil, so such a run prints as before.
func WriteJobResourcesText(w io.Writer, r *RunResources) error {
	if r == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString("\nCPU, memory and time (from sacct):\n")
	for _, l := range r.Lines() {
		fig := l.Figure
		switch {
		case fig == "":
			fig = l.Tip
		case l.Tip != "":
			fig += "; " + l.Tip
		}
		fmt.Fprintf(&b, "  %-16s %s\n", l.What, fig)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJobJSONResources is WriteJobJSONMessages with the run's resources as
// the object's last key, "resources"; without them it writes exactly what
// WriteJobJSONMessages does.
func WriteJobJSONResources(w io.Writer, det *Detail, m *teams.Mapping, shown string, ms []JobMessage, r *RunResources) error {
	if r == nil {
		return WriteJobJSONMessages(w, det, m, shown, ms)
	}
	var b bytes.Buffer
	if err := WriteJobJSONMessages(&b, det, m, shown, ms); err != nil {
		return err
	}
	if err := appendJSONKey(&b, "resources", r); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

// appendJSONKey adds key: v as the last key of the indented object the
// job's JSON encoder wrote to b, at the object's indent.
func appendJSONKey(b *bytes.Buffer, key string, v any) error {
	// The encoder ends the indented object with "\n}\n": the key goes
	// before its closing brace.
	const end = "\n}\n"
	if !bytes.HasSuffix(b.Bytes(), []byte(end)) {
		return fmt.Errorf("write job json: unexpected end of the object")
	}
	val, err := json.MarshalIndent(v, "  ", "  ")
	if err != nil {
		return fmt.Errorf("write job json: %w", err)
	}
	b.Truncate(b.Len() - len(end))
	fmt.Fprintf(b, ",\n  %q: ", key)
	b.Write(val)
	b.WriteString(end)
	return nil
}
