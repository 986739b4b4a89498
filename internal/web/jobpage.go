package web

import (
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/aicloud/gpusuite/internal/plot"
	"github.com/aicloud/gpusuite/internal/report"
)

type gpuView struct {
	Node, Name, UUID, Model, Source, Color string
	UtilMean, UtilMax                      *float64
	MemMax, MemTotal, MemPct               *float64
	EnergyKWh                              *float64
	IdleS, SampleS                         float64
	Idle                                   string
	IdlePct                                *float64
}

// metricView is one row of the job's metrics table: a GPU's power or
// chosen metric, mean and peak in its unit, or why the GPU cannot give it.
type metricView struct {
	Node, GPU, Name         string
	Mean, Peak, Unsupported string
}

type nodePartView struct {
	Node, Model, Start, End, EndSource string
	GPUs                               int64
	Estimated                          bool
	Exit                               string
}

// messageView is one message the notifier kept about the job: what,
// to whom, when, and what became of it.
type messageView struct {
	Queued, Rule, Channel, Recipient, Outcome string
}

type jobView struct {
	base
	Job                       string
	Cluster, User, UserURL    string
	Team, TeamURL, Color      string
	Account, Partition, Nodes string
	GPUCount                  int64
	Start, End, Elapsed       string
	State                     string
	Running, Estimated        bool
	Ignored                   bool
	IgnoreReason              string
	Decided                   string // who last decided whether the run counts, when; "": none did
	AllocS                    int64
	UsedS, IdleS, Eff         *float64
	EnergyKWh                 float64
	Notes                     []string
	Events                    []string
	Metrics                   []metricView
	GPUs                      []gpuView
	Parts                     []nodePartView
	Messages                  []messageView
	Resources                 []report.ResourceLine
	UtilChart, MemChart       chart
	API                       string
	// Ignore is the ignore form (web.forms), for coordinators of the
	// job's account and admins; nil: none.
	Ignore *ignoreForm
}

var gpuPalette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#b07aa1", "#76b7b2", "#edc948", "#ff9da7"}

func (h *Handler) jobPage(w http.ResponseWriter, r *http.Request) error {
	var v jobView
	several := false
	err := h.withConn(r, func(c *conn) error {
		det, ms, err := h.jobWithMessages(r, c)
		if err != nil {
			return err
		}
		_, colors, err := h.teamsOf(r.Context(), c)
		if err != nil {
			return err
		}
		if err := h.ingestState(r.Context(), c, &v.base); err != nil {
			return err
		}
		h.fillJob(&v, det, colors)
		v.Ignore = h.jobIgnoreForm(r, det)
		u, err := c.rep.RunResourcesOf(r.Context(), det)
		if err != nil {
			return err
		}
		if u != nil {
			v.Resources = u.Lines()
		}
		for _, m := range ms {
			v.Messages = append(v.Messages, messageView{Queued: m.Queued.In(h.o.Location).Format("2006-01-02 15:04:05"), Rule: m.Rule, Channel: m.Channel,
				Recipient: m.Recipient, Outcome: m.Outcome(h.o.Location)})
		}
		several = len(c.rep.Clusters()) > 1
		return nil
	})
	if err != nil {
		return err
	}
	ingest, bad := v.Ingest, v.IngestBad
	v.base = h.base(r, nil, "Job "+v.Job)
	v.Ingest, v.IngestBad = ingest, bad
	acct := "/accounting"
	if several {
		// The way back reads the job's cluster, not the default.
		keep := "?clusters=" + url.QueryEscape(v.Cluster)
		acct, v.TeamURL = acct+keep, v.TeamURL+keep
		if v.UserURL != "" {
			v.UserURL += keep
		}
	}
	v.Crumbs = []link{{Name: "Accounting", URL: acct}, {Name: v.Team, URL: v.TeamURL}, {Name: v.User, URL: v.UserURL}}
	v.CLI = "gpuacct job " + v.Job
	if v.Cluster != "" {
		v.CLI += " --cluster " + shellQuote(v.Cluster)
	}
	h.render(w, http.StatusOK, "job", &v)
	return nil
}

func (h *Handler) fillJob(v *jobView, det *report.Detail, colors map[string]string) {
	j := &det.Job
	loc := h.o.Location
	team := h.mapping.Team(j.Account, j.User)
	user, userURL := h.userLink(j.User)
	v.Job, v.Cluster, v.User, v.UserURL, v.Team, v.TeamURL, v.Color = j.ID(), j.Cluster, user, userURL, team, teamPath(team), plot.TeamColor(colors, team)
	v.Account, v.Partition, v.Nodes, v.GPUCount, v.State = j.Account, j.Partition, j.Nodes, j.GPUs, j.State
	v.Start, v.Elapsed, v.Running, v.Estimated, v.Ignored = localTime(j.Start, loc), dur(j.Elapsed(det.Now)), j.End == nil, j.EndEstimated, j.Ignored
	v.IgnoreReason = j.Reason()
	if d, ok := report.LastDecision(j); ok {
		by, at := h.v.user(d.By), localTime(d.At.Unix(), loc)
		v.IgnoreReason, v.Decided = d.Reason, h.tr.T("counted again by %s at %s", by, at)
		if d.Ignored {
			v.Decided = h.tr.T("ignored by %s at %s", by, at)
		}
	}
	if j.End != nil {
		v.End = localTime(*j.End, loc)
	}
	v.AllocS, v.EnergyKWh, v.Notes, v.Events = j.AllocS, float64(j.EnergyMJ)/3.6e9, det.Notes, det.EventNotes(loc)
	v.UsedS, v.IdleS, v.Eff = sampled(j)
	v.API = jobPath("/api/v1/jobs", j.Cluster, j.ID())
	for _, p := range det.Nodes {
		pv := nodePartView{Node: p.Node, Model: p.Model, GPUs: p.GPUs, EndSource: p.EndSource, Estimated: p.EndEstimated, Start: missing, End: missing, Exit: missing}
		if p.Start != nil {
			pv.Start = localTime(*p.Start, loc)
		}
		if p.End != nil {
			pv.End = localTime(*p.End, loc)
		}
		if p.ExitCode != nil {
			pv.Exit = fmt.Sprint(*p.ExitCode)
		}
		v.Parts = append(v.Parts, pv)
	}
	var util, mem []lineSeries
	memTop := 0.0
	for i, g := range det.GPUs {
		name := g.UUID
		if g.Index != nil {
			name = fmt.Sprint(*g.Index)
		}
		gv := gpuView{Node: g.Node, Name: name, UUID: g.UUID, Model: g.Model, Source: g.Source, Color: gpuPalette[i%len(gpuPalette)],
			UtilMean: g.UtilMean, UtilMax: g.UtilMax, EnergyKWh: g.EnergyKWh, IdleS: g.IdleS, SampleS: g.SampleS, Idle: dur(int64(g.IdleS))}
		if g.MemMaxMiB != nil {
			x := *g.MemMaxMiB / 1024
			gv.MemMax = &x
		}
		if g.MemTotalMiB != nil {
			x := *g.MemTotalMiB / 1024
			gv.MemTotal = &x
			memTop = max(memTop, x)
			if gv.MemMax != nil && x > 0 {
				p := 100 * *gv.MemMax / x
				gv.MemPct = &p
			}
		}
		if g.SampleS > 0 {
			p := 100 * g.IdleS / g.SampleS
			gv.IdlePct = &p
		}
		v.GPUs = append(v.GPUs, gv)
		v.Metrics = append(v.Metrics, metricViews(g, name)...)
		label := g.Node + " GPU " + name
		us := lineSeries{Name: label, Color: gv.Color}
		ms := lineSeries{Name: label, Color: gv.Color}
		for _, p := range g.Series {
			us.Points = append(us.Points, linePoint{T: p.T, V: p.Util})
			var m *float64
			if p.MemMiB != nil {
				x := *p.MemMiB / 1024
				m = &x
			}
			ms.Points = append(ms.Points, linePoint{T: p.T, V: m})
		}
		util, mem = append(util, us), append(mem, ms)
	}
	from := j.Start * 1000
	to := det.Now.UnixMilli()
	if j.End != nil {
		to = *j.End * 1000
	}
	v.UtilChart = lines("GPU utilization over the job", "%", from, to, 100, util, loc)
	v.MemChart = lines("GPU memory used over the job", "GiB", from, to, memTop, mem, loc)
}

// metricViews are a GPU's rows of the metrics table: power, then the
// chosen metrics in catalogue order.
func metricViews(g report.GPUStat, name string) []metricView {
	var out []metricView
	for _, r := range report.MetricRows(g, missing) {
		out = append(out, metricView{Node: g.Node, GPU: name, Name: r.Name, Mean: r.Mean, Peak: r.Peak, Unsupported: r.Unsupported})
	}
	return out
}

// jobWithMessages is loadJob, and the notifier's messages about the run
// as the viewer may read them: whoever may not see the job's user sees
// neither the recipients (a mail address names the user) nor them in an
// error.
func (h *Handler) jobWithMessages(r *http.Request, c *conn) (*report.Detail, []report.JobMessage, error) {
	det, err := h.loadJob(r, c)
	if err != nil {
		return nil, nil, err
	}
	ms, err := c.rep.JobMessages(r.Context(), &det.Job)
	if err != nil {
		return nil, nil, err
	}
	if h.v.sees(det.Job.User) {
		return det, ms, nil
	}
	for i := range ms {
		if rc := ms[i].Recipient; rc != "" {
			ms[i].Error = strings.ReplaceAll(ms[i].Error, rc, hiddenUser)
		}
		ms[i].Recipient = hiddenUser
	}
	return det, ms, nil
}
