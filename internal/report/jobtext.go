package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
)

// JobSummary is the stable JSON form of a job's figures (docs/reports.md),
// shared by `gpuacct job --json` and the dashboard's /api/v1/jobs.
type JobSummary struct {
	Cluster      string   `json:"cluster"`
	Job          string   `json:"job"`
	JobID        int64    `json:"job_id"`
	Restart      int      `json:"restart"`
	ArrayJobID   *int64   `json:"array_job_id,omitempty"`
	ArrayTaskID  *int64   `json:"array_task_id,omitempty"`
	User         string   `json:"user"`
	Account      string   `json:"account"`
	Team         string   `json:"team"`
	Partition    string   `json:"partition"`
	Nodes        string   `json:"nodes"`
	GPUs         int64    `json:"gpus"`
	Start        string   `json:"start"`
	End          *string  `json:"end"`
	ElapsedS     int64    `json:"elapsed_s"`
	State        string   `json:"state"`
	EndEstimated bool     `json:"end_estimated"`
	Ignored      bool     `json:"ignored"`
	IgnoreReason *string  `json:"ignore_reason,omitempty"`
	IgnoreBy     *string  `json:"ignore_by,omitempty"`
	IgnoreAt     *string  `json:"ignore_at,omitempty"`
	AllocGPUH    float64  `json:"alloc_gpu_hours"`
	UsedGPUH     *float64 `json:"used_gpu_hours"`
	Efficiency   *float64 `json:"efficiency_pct"`
	IdleGPUH     *float64 `json:"idle_gpu_hours"`
	EnergyKWh    float64  `json:"energy_kwh"`
	// EnergyMJ is the job's energy, the sum of its GPUs' exactly;
	// PowerMeanW is it over the time its GPUs drew it in (a list's,
	// which has no GPUs, over its sampled GPU-seconds).
	EnergyMJ   int64    `json:"energy_mj,omitempty"`
	PowerMeanW *float64 `json:"power_mean_w,omitempty"`
}

// Summarize is j's summary, with its team from the mapping's answer and
// elapsed time up to now for a running job.
func Summarize(j *JobRow, team string, now time.Time) JobSummary {
	x := JobSummary{Cluster: j.Cluster, Job: j.ID(), JobID: j.JobID, Restart: j.Restart, ArrayJobID: j.ArrayJobID, ArrayTaskID: j.ArrayTaskID,
		User: j.User, Account: j.Account, Team: team, Partition: j.Partition, Nodes: j.Nodes, GPUs: j.GPUs,
		Start: time.Unix(j.Start, 0).UTC().Format(time.RFC3339), ElapsedS: j.Elapsed(now), State: j.State, EndEstimated: j.EndEstimated,
		Ignored: j.Ignored, AllocGPUH: table.UnitGPUHours.Round(float64(j.AllocS) / 3600), EnergyKWh: table.UnitKWh.Round(float64(j.EnergyMJ) / 3.6e9)}
	if j.End != nil {
		s := time.Unix(*j.End, 0).UTC().Format(time.RFC3339)
		x.End = &s
	}
	x.IgnoreReason = j.IgnoreReason
	// Who made the last explicit decision and when; absent: none.
	if d, ok := LastDecision(j); ok {
		at := d.At.UTC().Format(time.RFC3339)
		x.IgnoreBy, x.IgnoreAt = &d.By, &at
	}
	x.EnergyMJ = j.EnergyMJ
	if j.EnergyMJ > 0 && j.SampleS > 0 {
		x.PowerMeanW = rounded(table.UnitWatts, float64(j.EnergyMJ)/1000/j.SampleS)
	}
	// Every hour figure, allocated as well, is at its unit's precision
	// (table.UnitGPUHours).
	if j.SampleS > 0 {
		x.UsedGPUH, x.IdleGPUH = rounded(table.UnitGPUHours, j.UsedS/3600), rounded(table.UnitGPUHours, j.IdleS/3600)
		if j.AllocS > 0 {
			x.Efficiency = rounded(table.UnitPercent, 100*j.UsedS/float64(j.AllocS))
		}
	}
	return x
}

// rounded is a pointer to v at u's precision.
func rounded(u table.Unit, v float64) *float64 {
	r := u.Round(v)
	return &r
}

// roundPtr is p's value at u's precision, nil for nil.
func roundPtr(u table.Unit, p *float64) *float64 {
	if p == nil {
		return nil
	}
	return rounded(u, *p)
}

// roundedGPUs are copies of gs with every figure at its unit's precision,
// for JSON; gs keep their full values for what is computed from them.
func roundedGPUs(gs []GPUStat) []GPUStat {
	if gs == nil {
		return nil
	}
	out := make([]GPUStat, len(gs))
	for i, g := range gs {
		g.SampleS, g.IdleS = table.UnitSeconds.Round(g.SampleS), table.UnitSeconds.Round(g.IdleS)
		g.UtilMean, g.UtilMax = roundPtr(table.UnitPercent, g.UtilMean), roundPtr(table.UnitPercent, g.UtilMax)
		g.MemMaxMiB, g.MemTotalMiB = roundPtr(table.UnitMiB, g.MemMaxMiB), roundPtr(table.UnitMiB, g.MemTotalMiB)
		g.EnergyKWh = roundPtr(table.UnitKWh, g.EnergyKWh)
		g.PowerMeanW, g.PowerPeakW = roundPtr(table.UnitWatts, g.PowerMeanW), roundPtr(table.UnitWatts, g.PowerPeakW)
		ms := make([]MetricStat, len(g.Metrics))
		for k, m := range g.Metrics {
			u := table.UnitOf(m.Name)
			m.Mean, m.Peak, m.Seconds = roundPtr(u, m.Mean), roundPtr(u, m.Peak), table.UnitSeconds.Round(m.Seconds)
			ms[k] = m
		}
		if g.Metrics != nil {
			g.Metrics = ms
		}
		out[i] = g
	}
	return out
}

// jobJSON is `gpuacct job --json`: the summary, then the detail.
type jobJSON struct {
	JobSummary
	NodeParts []NodePart `json:"node_parts"`
	GPUStats  []GPUStat  `json:"gpus_detail"`
	GPUEvents []GPUEvent `json:"gpu_events"`
	Notes     []string   `json:"notes"`
	// Billing is the run's billing-unit-hours, only where it was billed:
	// a site without weights sees the keys it saw before.
	Billing *float64 `json:"billing,omitempty"`
}

// WriteJobJSON writes det as one JSON object. shown is the user name to
// write ("": the job's own); the team is the job's user's either way.
func WriteJobJSON(w io.Writer, det *Detail, m *teams.Mapping, shown string) error {
	j := &det.Job
	x := jobJSON{JobSummary: Summarize(j, m.Team(j.Account, j.User), det.Now), NodeParts: det.Nodes, GPUStats: roundedGPUs(det.GPUs), GPUEvents: det.Events,
		Notes: append(det.EventNotes(time.UTC), det.Notes...)}
	if shown != "" {
		x.User = shown
	}
	// The job's mean power over the time its GPUs drew its energy.
	x.PowerMeanW = roundPtr(table.UnitWatts, JobPowerMeanW(det))
	if j.Billing != 0 {
		x.Billing = rounded(table.UnitGPUHours, j.Billing/3600)
	}
	if x.GPUEvents == nil {
		x.GPUEvents = []GPUEvent{}
	}
	if x.NodeParts == nil {
		x.NodeParts = []NodePart{}
	}
	if x.GPUStats == nil {
		x.GPUStats = []GPUStat{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(x); err != nil {
		return fmt.Errorf("write job json: %w", err)
	}
	return nil
}

func optF(p *float64, format string) string {
	if p == nil {
		return "-"
	}
	return fmt.Sprintf(format, *p)
}

// WriteJobText writes det for a terminal of the given width, in English.
func WriteJobText(w io.Writer, det *Detail, m *teams.Mapping, loc *time.Location, width int) error {
	return WriteJobTextIn(w, det, m, loc, width, i18n.Plain())
}

// WriteJobTextIn is WriteJobText in tr's language: the lines and
// headings; the figures and the findings (Notes) are as in English.
func WriteJobTextIn(w io.Writer, det *Detail, m *teams.Mapping, loc *time.Location, width int, tr *i18n.Printer) error {
	j := &det.Job
	var b strings.Builder
	tf := func(t int64) string { return tr.Time(time.Unix(t, 0).In(loc), "2006-01-02 15:04:05") }
	end := tr.T("running")
	if j.End != nil {
		end = tf(*j.End)
		if j.EndEstimated {
			end += tr.T(" (estimated)")
		}
	}
	b.WriteString(tr.T("Job %s on %s: %s", j.ID(), j.Cluster, j.State) + "\n")
	if j.Ignored {
		// Said under the title, not only among the notes: every figure
		// below is left out of the reports.
		b.WriteString(tr.T("  IGNORED: left out of every report; %s", ignoredWhy(j, tf, tr)) + "\n")
	} else if d, ok := LastDecision(j); ok {
		// An unignore clears the reason: only this says someone chose to
		// count the run.
		b.WriteString("  " + tr.T("counted again by %s at %s", d.By, tf(d.At.Unix())) + "\n")
	}
	b.WriteString(tr.T("  user %s, account %s, team %s, partition %s", j.User, j.Account, m.Team(j.Account, j.User), j.Partition) + "\n")
	b.WriteString(tr.N(int(j.GPUs), "  %d GPU on %s", "  %d GPUs on %s", j.GPUs, j.Nodes) + "\n")
	b.WriteString(tr.T("  start %s, end %s, elapsed %s%s", tf(j.Start), end, (time.Duration(j.Elapsed(det.Now))*time.Second).String(), exitText(det.Nodes, tr)) + "\n")
	u := usageCells(j.Usage, 0)
	power := ""
	if w := JobPowerMeanW(det); w != nil {
		power = tr.T(", mean power %s per GPU", HumanMetric("power_w", *w))
	}
	b.WriteString(tr.T("  allocated %.2f GPU-h, used %s GPU-h, efficiency %s, idle %s GPU-h, energy %.3f kWh%s",
		float64(j.AllocS)/3600, optAny(u[1], 1/3600.0, "%.2f"), optAny(u[2], 1, "%.0f%%"), optAny(u[3], 1/3600.0, "%.2f"), float64(j.EnergyMJ)/3.6e9, power) + "\n")
	if j.Billing != 0 {
		// Only a billed run: a site without weights prints what it did.
		b.WriteString(tr.T("  billing %.2f unit-hours", j.Billing/3600) + "\n")
	}
	if len(det.GPUs) > 0 {
		b.WriteString("\n")
		from := j.Start * 1000
		to := det.Now.UnixMilli()
		if j.End != nil {
			to = *j.End * 1000
		}
		// Each column is as wide as English lays it out, or as its
		// heading in display width where a translation is wider; the
		// sparkline takes what is left of the terminal.
		heads := []string{tr.T("NODE"), tr.T("GPU"), tr.T("MEAN"), tr.T("PEAK"), tr.T("PEAK MEM"), "kWh", tr.T("IDLE")}
		ws := []int{8, 4, 5, 5, 14, 8, 6} // the columns' English widths
		used := 12                        // and the gaps around them and the sparkline
		var h strings.Builder
		h.WriteString(" ")
		for i, hd := range heads {
			ws[i] = max(ws[i], i18n.Width(hd))
			used += ws[i]
			if i < 2 {
				h.WriteString(" " + i18n.Left(hd, ws[i]))
			} else {
				h.WriteString(" " + i18n.Right(hd, ws[i]))
			}
		}
		spark := max(10, width-used)
		b.WriteString(h.String() + "  " + tr.T("UTILIZATION OVER THE JOB") + "\n")
		for _, g := range det.GPUs {
			mem := "-"
			if g.MemMaxMiB != nil {
				mem = fmt.Sprintf("%.1f", *g.MemMaxMiB/1024)
				if g.MemTotalMiB != nil && *g.MemTotalMiB > 0 {
					mem += fmt.Sprintf("/%.0fG", *g.MemTotalMiB/1024)
				} else {
					mem += "G"
				}
			}
			idle := "-"
			if g.SampleS > 0 {
				idle = pct(100 * g.IdleS / g.SampleS)
			}
			fmt.Fprintf(&b, "  %-*s %-*s %*s %*s %*s %*s %*s  %s\n", ws[0], fit(g.Node, 8), ws[1], gpuName(g), ws[2], optF(g.UtilMean, "%.0f%%"), ws[3], optF(g.UtilMax, "%.0f%%"),
				ws[4], mem, ws[5], optF(g.EnergyKWh, "%.3f"), ws[6], idle, Sparkline(g.Series, from, to, spark))
		}
	}
	writeMetrics(&b, det, tr)
	b.WriteString("\n" + tr.T("Notes:") + "\n")
	for _, n := range append(det.EventNotes(loc), det.Notes...) {
		fmt.Fprintf(&b, "  - %s\n", n)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ignoredWhy is the reason a run is ignored, after who decided it and
// when where the ledger keeps them (LastDecision).
func ignoredWhy(j *JobRow, tf func(int64) string, tr *i18n.Printer) string {
	d, decided := LastDecision(j)
	why := tr.T("no reason recorded")
	if d.Reason != "" {
		why = tr.T("reason: %s", d.Reason)
	}
	if !decided {
		return why
	}
	return tr.T("ignored by %s at %s, %s", d.By, tf(d.At.Unix()), why)
}

// Decision is the last explicit decision on whether a run counts
// (gpuacct ignore or unignore, the dashboard's form), as the job's text
// and page show it.
type Decision struct {
	Ignored bool
	By      string
	At      time.Time
	// Reason is the run's, without the " (by who, when)" the ledger's
	// writer ends an ignore's with: said apart, by By and At.
	Reason string
}

// LastDecision is j's last explicit decision; ok false when the ledger
// keeps none (the run is as it came, ignored by a tag in its comment,
// or decided before the ledger kept who and when), Reason then being
// the run's as it is.
func LastDecision(j *JobRow) (d Decision, ok bool) {
	d = Decision{Ignored: j.Ignored, Reason: j.Reason()}
	if j.IgnoreBy == nil || j.IgnoreAt == nil {
		return d, false
	}
	d.By, d.At = *j.IgnoreBy, time.Unix(*j.IgnoreAt, 0)
	by := " (by " + d.By + ", "
	if i := strings.LastIndex(d.Reason, by); i >= 0 {
		stamp, closed := strings.CutSuffix(d.Reason[i+len(by):], ")")
		if _, err := time.Parse("2006-01-02 15:04Z", stamp); closed && err == nil {
			d.Reason = d.Reason[:i]
		}
	}
	return d, true
}

func optAny(v any, scale float64, format string) string {
	f, ok := v.(float64)
	if !ok {
		return "-"
	}
	return fmt.Sprintf(format, f*scale)
}

func fit(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// exitText is ", exit code N" of a finished job: the code its nodes gave,
// or each node's where they differ; "" while none is known.
func exitText(parts []NodePart, tr *i18n.Printer) string {
	var first *int64
	differ := false
	for _, p := range parts {
		if p.ExitCode == nil {
			continue
		}
		if first == nil {
			first = p.ExitCode
		}
		differ = differ || *p.ExitCode != *first
	}
	switch {
	case first == nil:
		return ""
	case !differ:
		return tr.T(", exit code %s", strconv.FormatInt(*first, 10))
	}
	var codes []string
	for _, p := range parts {
		if p.ExitCode != nil {
			codes = append(codes, strconv.FormatInt(*p.ExitCode, 10)+" ("+p.Node+")")
		}
	}
	return tr.T(", exit codes %s", strings.Join(codes, ", "))
}

// MetricRow is one line of a GPU's metrics table, in people's units.
type MetricRow struct {
	Name, Mean, Peak string
	// Unsupported is why the GPU cannot give the metric (no Mean, Peak).
	Unsupported string
}

// MetricRows are g's metrics table, as gpuacct job and the job page show
// it: power first, then the chosen metrics in catalogue order; none is a
// figure the samples did not give.
func MetricRows(g GPUStat, none string) []MetricRow {
	human := func(name string, p *float64) string {
		if p == nil {
			return none
		}
		return HumanMetric(name, *p)
	}
	var out []MetricRow
	if g.PowerMeanW != nil {
		out = append(out, MetricRow{Name: "power_w", Mean: human("power_w", g.PowerMeanW), Peak: human("power_w", g.PowerPeakW)})
	}
	for _, m := range g.Metrics {
		r := MetricRow{Name: m.Name, Unsupported: m.Unsupported}
		if m.Unsupported == "" {
			r.Mean, r.Peak = human(m.Name, m.Mean), human(m.Name, m.Peak)
		}
		out = append(out, r)
	}
	return out
}

// writeMetrics writes each GPU's power and chosen metrics, mean and peak
// over the job, and the metrics it cannot give with the reason, once.
func writeMetrics(b *strings.Builder, det *Detail, tr *i18n.Printer) {
	some := false
	for _, g := range det.GPUs {
		some = some || g.PowerMeanW != nil || len(g.Metrics) > 0
	}
	if !some {
		return
	}
	b.WriteString("\n  " + i18n.Left(tr.T("METRIC (OVER THE JOB)"), 30) + " " + i18n.Right(tr.T("MEAN"), 14) + " " + i18n.Right(tr.T("PEAK"), 14) + "\n")
	for _, g := range det.GPUs {
		rows := MetricRows(g, "-")
		if len(rows) == 0 {
			continue
		}
		b.WriteString(tr.T("  GPU %s on %s", gpuName(g), g.Node) + "\n")
		for _, r := range rows {
			if r.Unsupported != "" {
				fmt.Fprintf(b, "    %-28s %s\n", r.Name, tr.T("not supported: %s", r.Unsupported))
				continue
			}
			fmt.Fprintf(b, "    %-28s %14s %14s\n", r.Name, r.Mean, r.Peak)
		}
	}
}
