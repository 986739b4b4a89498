package web

import (
	"bytes"
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/plot"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

var pageNames = []string{"board", "overview", "team", "user", "job", "error", "budget", "me", "book"}

// htmlMessage is the template's TH: a catalogue message as the page's
// HTML, so that an apostrophe stays one (T's would be &#39;): the
// catalogue is ours, and each argument but a number is escaped as the
// template escapes text (a Stringer or error may carry what a user typed).
func htmlMessage(tr *i18n.Printer, key string, args ...any) template.HTML {
	if len(args) == 0 {
		return template.HTML(tr.Text(key))
	}
	for i, a := range args {
		switch a.(type) {
		case int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64, float32, float64:
		default:
			args[i] = template.HTMLEscapeString(fmt.Sprint(a))
		}
	}
	return template.HTML(tr.T(key, args...))
}

// parsePages parses each page with the shared layout, speaking tr's
// language (T, lang).
func parsePages(tr *i18n.Printer) (map[string]*template.Template, error) {
	th := func(key string, args ...any) template.HTML { return htmlMessage(tr, key, args...) }
	funcs := template.FuncMap{
		"gpuh": gpuh, "pct": pct, "kwh": kwh, "int": integer, "dur": dur, "ago": ago,
		"bar": barStyle, "dot": dotStyle, "eff": effClass, "team": teamPath, "user": userPath,
		"T": tr.T, "TH": th, "lang": tr.Lang, "messages": tr.Messages,
	}
	out := map[string]*template.Template{}
	for _, p := range pageNames {
		t, err := template.New(p).Funcs(funcs).ParseFS(assets, "templates/layout.html", "templates/chart.html", "templates/group.html", "templates/"+p+".html")
		if err != nil {
			return nil, fmt.Errorf("web: parse template %s: %w", p, err)
		}
		out[p] = t
	}
	return out, nil
}

// base is what every page's layout shows.
type base struct {
	Title     string
	Crumbs    []link
	Static    string
	Start     string
	End       string
	Period    string
	Periods   []option
	Presets   []link
	Window    string
	Zone      string
	CLI       string
	Generated string
	Ingest    string
	IngestBad bool
	Path      string
	// The cluster picker (several clusters in the ledger): the clusters
	// read as the heading says them, the choices, and the page's other
	// parameters its GET form carries; Scope is ?clusters= to keep.
	ScopeLabel string
	Clusters   []option
	Keep       []keepField
	Scope      string
	// Several: the page reads more than one cluster, so its tables
	// carry a cluster column and each share is of its own cluster, as
	// gpuacct report --all-clusters prints them.
	Several bool
	// Budget is the header's line on the budgets of the logged-in
	// user's team (the board) or of the team (its page), linking to
	// BudgetURL.
	Budget    budgetHead
	BudgetURL string
	// BudgetCol: the teams' table has a budget column (budgets are
	// configured).
	BudgetCol bool
	// Me is the user the request logged in as: the header links to
	// their jobs (/me).
	Me string
}

type link struct {
	Name, URL string
	Active    bool
}

type option struct {
	Value, Label string
	Selected     bool
}

// pageHandler renders fn's page; an error becomes an error page with the
// error's status.
func (h *Handler) pageHandler(fn func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return h.answering(fn, func(w http.ResponseWriter, r *http.Request, code int, err error) {
		h := h.speaking(r)
		title := map[int]string{400: h.tr.T("Bad request"), 404: h.tr.T("Not found"), 503: h.tr.T("Accounting database unavailable")}[code]
		v := struct {
			base
			Code    int
			Message string
		}{base: h.base(r, nil, title), Code: code, Message: h.publicMsg(err)}
		h.render(w, code, "error", &v)
	})
}

func (h *Handler) render(w http.ResponseWriter, code int, page string, v any) {
	var b bytes.Buffer
	if err := h.pages[page].ExecuteTemplate(&b, "layout", v); err != nil {
		h.o.Log.Error("render page", "page", page, "err", err)
		http.Error(w, "render page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Add("Vary", "Accept-Language") // the page speaks the browser's language
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

// base fills the layout: the period form, presets and the window shown.
func (h *Handler) base(r *http.Request, q *query, title string) base {
	v := r.URL.Query()
	b := base{Title: title, Static: h.static.Version, Start: v.Get("start"), End: v.Get("end"), Period: v.Get("period"), Path: r.URL.Path,
		Generated: h.o.Now().In(h.o.Location).Format("2006-01-02 15:04:05 MST"), Scope: clustersParam(v)}
	b.Me, _ = h.who(r)
	for _, p := range []struct{ v, l string }{{"", "auto"}, {"day", "day"}, {"week", "week"}, {"month", "month"}} {
		b.Periods = append(b.Periods, option{Value: p.v, Label: p.l, Selected: p.v == b.Period})
	}
	presets := []struct{ name, start, end string }{
		{"Today", "today", ""}, {"24 hours", "now-24hours", ""}, {"7 days", "", ""},
		{"30 days", "now-30days", ""}, {"90 days", "now-90days", ""}, {"365 days", "now-365days", ""},
	}
	for _, p := range presets {
		u := url.Values{}
		if p.start != "" {
			u.Set("start", p.start)
		}
		if b.Period != "" {
			u.Set("period", b.Period)
		}
		if tz := v.Get("tz"); tz != "" {
			u.Set("tz", tz)
		}
		if b.Scope != "" {
			u.Set("clusters", b.Scope)
		}
		s := r.URL.Path
		if len(u) > 0 {
			s += "?" + u.Encode()
		}
		b.Presets = append(b.Presets, link{Name: p.name, URL: s, Active: p.start == b.Start && b.End == ""})
	}
	if q != nil {
		b.Window = fmtWindow(q.hours)
		b.Zone = zoneName(q.hours.Start)
	}
	return b
}

func zoneName(t time.Time) string {
	if t.Location() == time.Local {
		n, _ := t.Zone()
		return n
	}
	return t.Location().String()
}

// cliWindow is the window as gpuacct report options.
func cliWindow(q *query) string {
	s := fmt.Sprintf("--start %s --end %s", q.hours.Start.Format("2006-01-02T15:04"), q.hours.End.Format("2006-01-02T15:04"))
	if tz := q.vals.Get("tz"); tz != "" {
		s += " --tz " + shellQuote(tz)
	}
	return s
}

func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+:") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// ingestState is the freshness line of the header.
func (h *Handler) ingestState(ctx context.Context, c *conn, b *base) error {
	p, err := c.lastPass(ctx)
	if err != nil {
		return err
	}
	now := h.o.Now().Unix()
	switch {
	case p.LastOK == nil:
		b.Ingest, b.IngestBad = "no successful ingest pass yet", true
	default:
		age := now - *p.LastOK
		b.Ingest = "data as of " + ago(age)
		b.IngestBad = time.Duration(age)*time.Second > h.o.Check.Lag || !p.OK
		if !p.OK {
			b.Ingest += "; the last pass failed (gpuacct check)"
		}
	}
	return nil
}

// teamsOf is the known teams and their colors.
func (h *Handler) teamsOf(ctx context.Context, c *conn) ([]string, map[string]string, error) {
	known, err := c.rep.KnownTeams(ctx, h.mapping)
	if err != nil {
		return nil, nil, err
	}
	return known, plot.TeamColors(known), nil
}

// accounting runs fill on one connection for an accounting page, after
// what every such page does first: read q's clusters, fill b's cluster
// picker and its line on the ingest's freshness.
func (h *Handler) accounting(r *http.Request, q *query, b *base, fill func(ctx context.Context, c *conn) error) error {
	return h.withScope(h.src, r, q, func(c *conn) error {
		ctx := r.Context()
		h.picker(b, r, q)
		if err := h.ingestState(ctx, c, b); err != nil {
			return err
		}
		return fill(ctx, c)
	})
}

// ---- overview

type teamRow struct {
	usageRow
	URL, Color string
	// Budget is the team's budgets used, linking to BudgetURL.
	Budget, BudgetURL string
}

type userRow struct {
	usageRow
	URL   string
	Teams []link
	Color string
}

type runningView struct {
	Cluster                                                  string
	Job, URL, User, UserURL, Team, TeamURL, Color, Partition string
	Started, Elapsed                                         string
	GPUs                                                     []gpuChip
	AllocS                                                   int64
	Eff                                                      *float64
}

type gpuChip struct {
	Node, Name, Title string
	Util              *float64
	Class             string
}

type nodeView struct {
	Cluster, Name, Age, Last string
	GPUs                     int64
}

type overviewView struct {
	base
	Total        usageRow
	Teams        []teamRow
	Users        []userRow
	Chart        chart
	ChartPeriod  string
	Running      []runningView
	RunningCount int
	NodeCount    int
	GPUCount     int64
	Stale        []nodeView
	StaleAfter   string
}

func (h *Handler) overview(w http.ResponseWriter, r *http.Request) error {
	q, err := h.parseQuery(r.URL.Query())
	if err != nil {
		return err
	}
	v := overviewView{base: h.base(r, q, "GPU usage")}
	v.CLI = "gpuacct report teams " + cliWindow(q)
	per := q.autoPeriodFor()
	v.ChartPeriod = string(per)
	err = h.accounting(r, q, &v.base, func(ctx context.Context, c *conn) error {
		known, colors, err := h.teamsOf(ctx, c)
		if err != nil {
			return err
		}
		top, err := c.rep.Report(ctx, report.Request{Kind: "top", Window: q.hours, Filter: q.clusterFilter(), Scope: q.scope, Mapping: h.mapping, TopBy: "users", Limit: 10})
		if err != nil {
			return err
		}
		for _, row := range rowsOf(top) {
			v.Users = append(v.Users, h.userRow(row, q, colors))
		}
		// One pass over the rollups gives the chart and, summed over the
		// periods, the teams table (what gpuacct report teams prints).
		level := h.capacityLevel(ctx, c, q, per)
		series, perTeam, err := h.teamSeries(ctx, c, q, per, known, colors, level)
		if err != nil {
			return err
		}
		v.Chart = series
		v.Total = sum(perTeam)
		// A team's share is of its own cluster (of all when one is read).
		ofCluster := map[string]int64{}
		for _, row := range perTeam {
			ofCluster[row.Cluster] += row.AllocS
		}
		for _, row := range perTeam {
			if all := ofCluster[row.Cluster]; all > 0 {
				s := 100 * float64(row.AllocS) / float64(all)
				row.Share = &s
			}
			v.Teams = append(v.Teams, teamRow{usageRow: row, URL: teamPath(row.Name) + withParams(q.vals), Color: plot.TeamColor(colors, row.Name)})
		}
		if err := h.budgetColumn(ctx, c, &v.base, v.Teams); err != nil {
			return err
		}
		run, err := c.running(ctx, q.filter.Clusters, 1000)
		if err != nil {
			return err
		}
		v.RunningCount = len(run)
		for i := range run[:min(len(run), 50)] {
			v.Running = append(v.Running, h.runningView(&run[i], colors))
		}
		nodes, err := c.nodes(ctx, h.o.Now(), h.o)
		if err != nil {
			return err
		}
		for _, n := range nodes {
			if n.Forgotten || !q.inScope(n.Cluster) {
				continue
			}
			v.NodeCount++
			v.GPUCount += n.GPUs
			if n.Stale {
				nv := nodeView{Cluster: n.Cluster, Name: n.Name, GPUs: n.GPUs, Age: "never", Last: missing}
				if n.AgeS != nil {
					// The column is "Silent for": a duration, not "… ago".
					nv.Age, nv.Last = dur(*n.AgeS), localTime(*n.LastSeen, h.o.Location)
				}
				v.Stale = append(v.Stale, nv)
			}
		}
		v.StaleAfter = h.o.Check.Stale.String()
		return nil
	})
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "overview", &v)
	return nil
}

func (h *Handler) userRow(row usageRow, q *query, colors map[string]string) userRow {
	u := userRow{usageRow: row}
	u.Name = h.v.user(row.Name)
	if u.Name != hiddenUser && row.Name != "" && row.Name != "(unknown)" {
		u.URL = userPath(row.Name) + withParams(q.vals)
	}
	for _, t := range strings.Split(row.Teams, ",") {
		if t != "" {
			u.Teams = append(u.Teams, link{Name: t, URL: teamPath(t) + withParams(q.vals)})
			if u.Color == "" {
				u.Color = plot.TeamColor(colors, t)
			}
		}
	}
	return u
}

// teamSeries is the stacked chart of allocated GPU-hours per team and
// period, with the capacity level over it (nil: none), and each team's
// usage summed over the periods, busiest first.
func (h *Handler) teamSeries(ctx context.Context, c *conn, q *query, per timespec.Period, known []string, colors map[string]string, level *barSeries) (chart, []usageRow, error) {
	t, err := c.rep.Report(ctx, report.Request{Kind: "teams", Window: q.hours, Period: per, Filter: q.clusterFilter(), Scope: q.scope, Mapping: h.mapping})
	if err != nil {
		return chart{}, nil, err
	}
	// The chart stacks each team's hours over the clusters read; the
	// table keeps a team of two clusters on two rows.
	type teamKey struct{ cluster, team string }
	bs := timespec.Buckets(q.hours, per)
	labels := make([]string, len(bs))
	at := map[string]int{}
	for i, b := range bs {
		labels[i], at[b.Label] = b.Label, i
	}
	byTeam := map[string][]float64{}
	rowsByTeam := map[teamKey][]usageRow{}
	for _, row := range rowsOf(t) {
		k := teamKey{row.Cluster, row.Name}
		rowsByTeam[k] = append(rowsByTeam[k], row)
		vals := byTeam[row.Name]
		if vals == nil {
			vals = make([]float64, len(bs))
			byTeam[row.Name] = vals
		}
		if i, ok := at[row.Period]; ok {
			vals[i] += float64(row.AllocS) / 3600
		}
	}
	names := make([]string, 0, len(byTeam))
	for n := range byTeam {
		names = append(names, n)
	}
	sort.Slice(names, func(a, b int) bool { return indexOf(known, names[a]) < indexOf(known, names[b]) })
	var series []barSeries
	var totals []usageRow
	for _, n := range names {
		series = append(series, barSeries{Name: n, Color: plot.TeamColor(colors, n), URL: teamPath(n) + withParams(q.vals), Values: byTeam[n]})
	}
	for k, rows := range rowsByTeam {
		tot := sum(rows)
		tot.Cluster, tot.Name = k.cluster, k.team
		totals = append(totals, tot)
	}
	sort.Slice(totals, func(a, b int) bool {
		if totals[a].Cluster != totals[b].Cluster {
			return totals[a].Cluster < totals[b].Cluster
		}
		if totals[a].AllocS != totals[b].AllocS {
			return totals[a].AllocS > totals[b].AllocS
		}
		return totals[a].Name < totals[b].Name
	})
	return barsWithLevel("Allocated GPU-hours per "+string(per)+" and team", "GPU-h", labels, series, true, level), totals, nil
}

func indexOf(xs []string, s string) int {
	for i, x := range xs {
		if x == s {
			return i
		}
	}
	return len(xs)
}

// allocUsedSeries is the chart of allocated (pale) and used (solid)
// GPU-hours per period of one report row name.
func (h *Handler) allocUsedSeries(ctx context.Context, c *conn, q *query, per timespec.Period, req report.Request, color string) (chart, error) {
	req.Window, req.Period, req.Mapping = q.hours, per, h.mapping
	t, err := c.rep.Report(ctx, req)
	if err != nil {
		return chart{}, err
	}
	bs := timespec.Buckets(q.hours, per)
	labels := make([]string, len(bs))
	at := map[string]int{}
	for i, b := range bs {
		labels[i], at[b.Label] = b.Label, i
	}
	alloc := make([]float64, len(bs))
	used := make([]float64, len(bs))
	for _, row := range rowsOf(t) {
		if i, ok := at[row.Period]; ok {
			alloc[i] += float64(row.AllocS) / 3600
			if row.UsedS != nil {
				used[i] += *row.UsedS / 3600
			}
		}
	}
	return bars("Allocated and used GPU-hours per "+string(per), "GPU-h", labels,
		[]barSeries{{Name: "allocated", Color: color, Values: alloc}, {Name: "used", Color: color, Values: used}}, false), nil
}

func (h *Handler) runningView(j *runningJob, colors map[string]string) runningView {
	team := h.mapping.Team(j.Account, j.User)
	user, userURL := h.userLink(j.User)
	rv := runningView{Cluster: j.Cluster, Job: j.ID(), URL: jobPath("/job", j.Cluster, j.ID()), User: user, UserURL: userURL, Team: team,
		TeamURL: teamPath(team), Color: plot.TeamColor(colors, team), Partition: j.Partition, Started: localTime(j.Start, h.o.Location),
		Elapsed: dur(j.Elapsed(h.o.Now())), AllocS: j.AllocS}
	_, _, rv.Eff = sampled(&j.JobRow)
	for _, g := range j.GPUList {
		name := g.UUID
		if g.Index != nil {
			name = fmt.Sprint(*g.Index)
		}
		chip := gpuChip{Node: g.Node, Name: name, Util: g.Util, Class: "na"}
		chip.Title = fmt.Sprintf("%s GPU %s (%s): no sample yet", g.Node, name, g.UUID)
		if g.Util != nil {
			chip.Class = effClass(g.Util)
			chip.Title = fmt.Sprintf("%s GPU %s (%s): %.0f%% at %s", g.Node, name, g.UUID, *g.Util,
				time.UnixMilli(*g.AtMs).In(h.o.Location).Format("15:04:05"))
		}
		rv.GPUs = append(rv.GPUs, chip)
	}
	return rv
}

// ---- team and user pages

// jobRowView is one job of a team or user page. The templates show
// Cluster only when the page reads several clusters: there two clusters'
// job 7 are two jobs, and the column tells them apart.
type jobRowView struct {
	Cluster                                                         string
	Job, URL, User, UserURL, Team, TeamURL, Color, Partition, Nodes string
	GPUs                                                            int64
	Start, Elapsed, State                                           string
	Running, Estimated                                              bool
	AllocS                                                          int64
	UsedS, IdleS, Eff                                               *float64
}

type groupView struct {
	base
	Name, Kind, Color string
	Total             usageRow
	Chart             chart
	ChartPeriod       string
	Users             []userRow // team page
	Teams             []teamRow // user page
	Jobs              []jobRowView
	JobsMore          bool
	// JobsFrom and JobsTo number the jobs listed (from 1); JobsPrev and
	// JobsNext are the pages before and after ("": none).
	JobsFrom, JobsTo   int
	JobsPrev, JobsNext string
	Sorts              []link
	JobsAPI            string
}

// groupHead is what a team's and a user's page show above their reads
// (kind is "team" or "user"): the layout for q's window, the way back
// to the accounting page, the gpuacct command (cli, the window added)
// and the page's jobs as JSON; per is the chart's period.
func (h *Handler) groupHead(r *http.Request, q *query, kind, name, cli string) (v groupView, per timespec.Period) {
	title := map[string]string{"team": "Team ", "user": "User "}[kind] + name
	v = groupView{base: h.base(r, q, title), Name: name, Kind: kind}
	v.Crumbs = []link{{Name: "Accounting", URL: "/accounting" + withParams(q.vals)}}
	v.CLI = cli + " " + cliWindow(q)
	v.JobsAPI = "/api/v1/jobs" + withParams(q.vals, kind, name)
	per = q.autoPeriodFor()
	v.ChartPeriod = string(per)
	return v, per
}

func (h *Handler) teamPage(w http.ResponseWriter, r *http.Request) error {
	team := r.PathValue("team")
	q, err := h.parseQuery(r.URL.Query())
	if err != nil {
		return err
	}
	q.teams = []string{team}
	v, per := h.groupHead(r, q, "team", team, "gpuacct report users --teams "+shellQuote(team))
	err = h.accounting(r, q, &v.base, func(ctx context.Context, c *conn) error {
		known, colors, err := h.teamsOf(ctx, c)
		if err != nil {
			return err
		}
		if !contains(known, team) {
			return &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("unknown team %q (teams: %s)", team, strings.Join(known, ", "))}
		}
		v.Color = plot.TeamColor(colors, team)
		if err := h.teamBudgetLink(ctx, c, team, &v.base); err != nil {
			return err
		}
		rows, err := c.reportRows(ctx, report.Request{Kind: "users", Window: q.hours, Filter: q.clusterFilter(), Scope: q.scope, Teams: q.teams, Mapping: h.mapping}, &v.Total)
		if err != nil {
			return err
		}
		for _, row := range rows {
			v.Users = append(v.Users, h.userRow(row, q, colors))
		}
		return h.groupBody(ctx, r, c, q, &v, per, report.Request{Kind: "teams", Filter: q.clusterFilter(), Teams: q.teams}, colors)
	})
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "team", &v)
	return nil
}

func (h *Handler) userPage(w http.ResponseWriter, r *http.Request) error {
	user := r.PathValue("user")
	if !h.v.sees(user) {
		// Before any read: whether the user exists is not told either.
		return &httpError{code: http.StatusForbidden, msg: "web.private_data: only admins see other users' pages"}
	}
	q, err := h.parseQuery(r.URL.Query())
	if err != nil {
		return err
	}
	q.filter.Users = []string{user}
	v, per := h.groupHead(r, q, "user", user, "gpuacct report teams --users "+shellQuote(user))
	err = h.accounting(r, q, &v.base, func(ctx context.Context, c *conn) error {
		users, err := c.rep.Distinct(ctx, "user")
		if err != nil {
			return err
		}
		if !users[user] {
			return &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("unknown user %q (no GPU usage recorded)", user)}
		}
		_, colors, err := h.teamsOf(ctx, c)
		if err != nil {
			return err
		}
		rows, err := c.reportRows(ctx, report.Request{Kind: "teams", Window: q.hours, Filter: q.filter, Scope: q.scope, Mapping: h.mapping}, &v.Total)
		if err != nil {
			return err
		}
		for _, row := range rows {
			v.Teams = append(v.Teams, teamRow{usageRow: row, URL: teamPath(row.Name) + withParams(q.vals), Color: plot.TeamColor(colors, row.Name)})
		}
		v.Color = plot.Unassigned
		if len(v.Teams) > 0 {
			v.Color = v.Teams[0].Color
			v.Crumbs = append(v.Crumbs, link{Name: v.Teams[0].Name, URL: v.Teams[0].URL})
		}
		return h.groupBody(ctx, r, c, q, &v, per, report.Request{Kind: "users", Filter: q.filter}, colors)
	})
	if err != nil {
		return err
	}
	h.render(w, http.StatusOK, "user", &v)
	return nil
}

// groupBody fills what a team's and a user's page show below their
// usage table: the group's share of its clusters, its chart of chartReq
// (the group's report, its window and period set here) and its jobs.
func (h *Handler) groupBody(ctx context.Context, r *http.Request, c *conn, q *query, v *groupView, per timespec.Period, chartReq report.Request, colors map[string]string) error {
	var err error
	if v.Total.Share, err = h.shareOf(ctx, c, q, v.Total.AllocS); err != nil {
		return err
	}
	if v.Chart, err = h.allocUsedSeries(ctx, c, q, per, chartReq, v.Color); err != nil {
		return err
	}
	return h.jobsTable(r, c, q, v, colors)
}

// shareOf is alloc as a percentage of the allocated GPU-time of the
// clusters read in the window.
func (h *Handler) shareOf(ctx context.Context, c *conn, q *query, alloc int64) (*float64, error) {
	all, err := c.rep.Report(ctx, report.Request{Kind: "teams", Window: q.hours, Filter: q.clusterFilter(), Mapping: h.mapping})
	if err != nil {
		return nil, err
	}
	tot := sum(rowsOf(all)).AllocS
	if tot == 0 {
		return nil, nil
	}
	s := 100 * float64(alloc) / float64(tot)
	return &s, nil
}

// jobsPage is how many jobs a team or user page lists at a time, and
// maxJobsPage its last page: a page past it would read more rows than
// any answer may (report.MaxLimit).
const (
	jobsPage    = 50
	maxJobsPage = report.MaxLimit / jobsPage
)

// jobsTable fills the page's job list: the jobs overlapping the window
// in the chosen order, jobsPage at a time (?page=N, from 1), with links
// to the pages before and after, so every job in the window can be read
// on the page.
func (h *Handler) jobsTable(r *http.Request, c *conn, q *query, v *groupView, colors map[string]string) error {
	sortBy, err := parseSort(r.URL.Query().Get("sort"))
	if err != nil {
		return err
	}
	page := 1
	if s := r.URL.Query().Get("page"); s != "" {
		if page, err = strconv.Atoi(s); err != nil || page < 1 || page > maxJobsPage {
			return badRequest("page %q is not a number from 1 to %d", s, maxJobsPage)
		}
	}
	for _, s := range []struct{ v, l string }{{"", "newest"}, {"alloc", "most GPU-hours"}, {"eff", "least efficient"}, {"idle", "most idle"}} {
		v.Sorts = append(v.Sorts, link{Name: s.l, URL: r.URL.Path + withParams(q.vals, "sort", s.v) + "#jobs", Active: s.v == sortBy || (s.v == "" && sortBy == "start")})
	}
	q.limit, q.skip = jobsPage, (page-1)*jobsPage
	rows, more, err := h.jobs(r, c, q, "", sortBy)
	if err != nil {
		return err
	}
	if page > 1 && len(rows) == 0 {
		return &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("page %d is past the last job of the window", page)}
	}
	v.JobsMore = more
	for i := range rows {
		v.Jobs = append(v.Jobs, h.jobRowView(&rows[i], colors))
	}
	if len(rows) > 0 {
		v.JobsFrom, v.JobsTo = q.skip+1, q.skip+len(rows)
	}
	// A page's links keep its order; withParams keeps the window.
	keep := r.URL.Query().Get("sort")
	pageURL := func(n int) string {
		p := ""
		if n > 1 {
			p = strconv.Itoa(n)
		}
		return r.URL.Path + withParams(q.vals, "sort", keep, "page", p) + "#jobs"
	}
	if page > 1 {
		v.JobsPrev = pageURL(page - 1)
	}
	if more && page < maxJobsPage {
		v.JobsNext = pageURL(page + 1)
	}
	return nil
}

func (h *Handler) jobRowView(j *report.JobRow, colors map[string]string) jobRowView {
	team := h.mapping.Team(j.Account, j.User)
	user, userURL := h.userLink(j.User)
	x := jobRowView{Cluster: j.Cluster, Job: j.ID(), URL: jobPath("/job", j.Cluster, j.ID()), User: user, UserURL: userURL, Team: team,
		TeamURL: teamPath(team), Color: plot.TeamColor(colors, team), Partition: j.Partition, Nodes: j.Nodes, GPUs: j.GPUs,
		Start: localTime(j.Start, h.o.Location), Elapsed: dur(j.Elapsed(h.o.Now())), State: j.State, Running: j.End == nil,
		Estimated: j.EndEstimated, AllocS: j.AllocS}
	x.UsedS, x.IdleS, x.Eff = sampled(j)
	return x
}

// sampled is a job's used and idle GPU-seconds and its efficiency, nil
// without samples (never 0: unknown is not idle); the efficiency is nil
// too with nothing allocated.
func sampled(j *report.JobRow) (used, idle, eff *float64) {
	if j.SampleS <= 0 {
		return nil, nil, nil
	}
	u, i := j.UsedS, j.IdleS
	if j.AllocS > 0 {
		e := 100 * j.UsedS / float64(j.AllocS)
		eff = &e
	}
	return &u, &i, eff
}
