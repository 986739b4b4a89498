package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
)

// apiHandler runs fn and turns its error into {"error": "..."} with the
// error's status.
func (h *Handler) apiHandler(fn func(w http.ResponseWriter, r *http.Request) error) http.Handler {
	return h.answering(fn, func(w http.ResponseWriter, r *http.Request, code int, err error) {
		writeJSON(w, code, map[string]string{"error": h.publicMsg(err)})
	})
}

// answering runs fn; an error it returns is logged and answered by fail
// with the error's status, in an answer no cache keeps.
func (h *Handler) answering(fn func(w http.ResponseWriter, r *http.Request) error, fail func(w http.ResponseWriter, r *http.Request, code int, err error)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		err := fn(w, r)
		if err == nil {
			return
		}
		code := status(err)
		h.logFailure(r, code, err)
		w.Header().Set("Cache-Control", "no-store")
		fail(w, r, code, err)
	})
}

// replyJSON is an API handler's last step: the error of its read, or out
// with 200.
func replyJSON(w http.ResponseWriter, out any, err error) error {
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		code = http.StatusInternalServerError
		b.Reset()
		fmt.Fprintf(&b, "{\"error\": %q}\n", "encode answer: "+err.Error())
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(b.Bytes())
}

func writeRaw(w http.ResponseWriter, b []byte) error {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	_, err := w.Write(b)
	return err
}

// withConn runs fn on the current read-only connection; a failure to
// open, or an error fn returns that is not the client's, drops the
// connection so that the next request opens the database again.
func (h *Handler) withConn(r *http.Request, fn func(c *conn) error) error {
	return withConnOf(h.src, r, fn)
}

// withLiveConn is withConn on the live requests' own pool.
func (h *Handler) withLiveConn(r *http.Request, fn func(c *conn) error) error {
	return withConnOf(h.liveSrc, r, fn)
}

// withScope is withConnOf with q's clusters resolved (scope) before fn
// reads.
func (h *Handler) withScope(src *source, r *http.Request, q *query, fn func(c *conn) error) error {
	return withConnOf(src, r, func(c *conn) error {
		if err := h.scope(c, q); err != nil {
			return err
		}
		return fn(c)
	})
}

func withConnOf(src *source, r *http.Request, fn func(c *conn) error) error {
	c, release, err := src.acquire(r.Context())
	if err != nil {
		return fmt.Errorf("database unreadable: %w", err)
	}
	defer release()
	err = fn(c)
	if err != nil && status(err) >= 500 && !errors.Is(err, report.ErrNoJob) && r.Context().Err() == nil {
		src.forget(c)
	}
	return err
}

// GET /api/v1/report/{kind}: what gpuacct report KIND --format json writes.
func (h *Handler) apiReport(w http.ResponseWriter, r *http.Request) error {
	kind := r.PathValue("kind")
	if !contains(report.Kinds, kind) {
		return &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("unknown report %q: use one of %s", kind, strings.Join(report.Kinds, ", "))}
	}
	q, err := h.parseQuery(r.URL.Query())
	if err != nil {
		return err
	}
	by := r.URL.Query().Get("by")
	if by != "" && by != "users" && by != "teams" {
		return badRequest("by %q is not users or teams", by)
	}
	sortBy, err := parseSort(r.URL.Query().Get("sort"))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	err = h.withConn(r, func(c *conn) error {
		t, err := h.reportTable(r, c, q, kind, by, sortBy)
		if err != nil {
			return err
		}
		h.v.maskTable(t)
		return table.Write(&b, t, table.Options{Format: table.JSON, Units: q.units})
	})
	if err != nil {
		return err
	}
	return writeRaw(w, b.Bytes())
}

// reportTable checks the filters against the database (unknown team or
// node: 400) and builds the report exactly as gpuacct report does.
func (h *Handler) reportTable(r *http.Request, c *conn, q *query, kind, by, sortBy string) (*table.Table, error) {
	ctx := r.Context()
	if err := h.scope(c, q); err != nil {
		return nil, err
	}
	if err := h.checkFilter(ctx, c.rep, q.filter); err != nil {
		return nil, err
	}
	if len(q.teams) > 0 {
		known, err := c.rep.KnownTeams(ctx, h.mapping)
		if err != nil {
			return nil, err
		}
		if err := checkTeams(known, q.teams); err != nil {
			return nil, err
		}
	}
	if len(q.filter.Nodes) > 0 {
		nodes, err := c.nodes(ctx, h.o.Now(), h.o)
		if err != nil {
			return nil, err
		}
		if err := checkNodes(nodes, q.filter.Nodes); err != nil {
			return nil, err
		}
	}
	if kind == "jobs" {
		return c.rep.JobList(ctx, report.JobsQuery{Window: q.window, Filter: q.filter, Teams: q.teams, Mapping: h.mapping,
			Limit: q.limit, Sort: sortBy, Now: h.o.Now(), Scope: q.scope})
	}
	if by == "" {
		by = "users"
	}
	return c.rep.Report(ctx, report.Request{Kind: kind, Window: q.hours, Period: q.period, Filter: q.filter, Teams: q.teams,
		Mapping: h.mapping, TopBy: by, Limit: q.limit, Scope: q.scope})
}

// jobJSON is one job in /api/v1/jobs: the fields of gpuacct job --json,
// then its URL.
type jobJSON struct {
	report.JobSummary
	URL string `json:"url"`
	// GPUList is set for running jobs (/api/v1/jobs/running).
	GPUList []report.RunningGPU `json:"gpu_list,omitempty"`
}

func (h *Handler) jobOut(j *report.JobRow) jobJSON {
	out := jobJSON{JobSummary: report.Summarize(j, h.mapping.Team(j.Account, j.User), h.o.Now()), URL: jobPath("/api/v1/jobs", j.Cluster, j.ID())}
	out.User = h.v.user(out.User)
	return out
}

// jobsList is the answer of /api/v1/jobs.
type jobsList struct {
	// Clusters are the clusters read, when several share the ledger.
	Clusters  []string  `json:"clusters,omitempty"`
	Start     string    `json:"start"`
	End       string    `json:"end"`
	Count     int       `json:"count"`
	Truncated bool      `json:"truncated"`
	Jobs      []jobJSON `json:"jobs"`
}

// GET /api/v1/jobs?user=&team=&state=&start=&end=&sort=&limit=
// Without start and end the window is the last 7 days up to now, so
// that running jobs are in it.
func (h *Handler) apiJobs(w http.ResponseWriter, r *http.Request) error {
	v := r.URL.Query()
	if v.Get("start") == "" && v.Get("end") == "" {
		v.Set("start", "now-7days")
	}
	q, err := h.parseQuery(v)
	if err != nil {
		return err
	}
	state, err := parseState(r.URL.Query().Get("state"))
	if err != nil {
		return err
	}
	sortBy, err := parseSort(r.URL.Query().Get("sort"))
	if err != nil {
		return err
	}
	if q.limit == 0 {
		q.limit = 100
	}
	out := jobsList{Start: q.window.Start.Format(time.RFC3339), End: q.window.End.Format(time.RFC3339), Jobs: []jobJSON{}}
	err = h.withScope(h.src, r, q, func(c *conn) error {
		rows, more, err := h.jobs(r, c, q, state, sortBy)
		if err != nil {
			return err
		}
		for i := range rows {
			out.Jobs = append(out.Jobs, h.jobOut(&rows[i]))
		}
		out.Truncated, out.Clusters = more, q.scopeJSON()
		return nil
	})
	out.Count = len(out.Jobs)
	return replyJSON(w, out, err)
}

// jobs lists up to q.limit jobs overlapping the window in q's scope,
// after the first q.skip, which the caller has resolved; more says that
// there were more.
func (h *Handler) jobs(r *http.Request, c *conn, q *query, state, sortBy string) (rows []report.JobRow, more bool, err error) {
	ctx := r.Context()
	if err := h.checkFilter(ctx, c.rep, q.filter); err != nil {
		return nil, false, err
	}
	if len(q.teams) > 0 {
		known, err := c.rep.KnownTeams(ctx, h.mapping)
		if err != nil {
			return nil, false, err
		}
		if err := checkTeams(known, q.teams); err != nil {
			return nil, false, err
		}
	}
	jq := report.JobsQuery{Window: q.window, Filter: q.filter, Sort: sortBy}
	if len(q.filter.Nodes) > 0 {
		nodes, err := c.nodes(ctx, h.o.Now(), h.o)
		if err != nil {
			return nil, false, err
		}
		if err := checkNodes(nodes, q.filter.Nodes); err != nil {
			return nil, false, err
		}
		for _, n := range nodes {
			if contains(q.filter.Nodes, n.Name) || contains(q.filter.Nodes, n.Cluster+"/"+n.Name) {
				jq.NodeIDs = append(jq.NodeIDs, n.ID)
			}
		}
	}
	if jq.StartFrom, err = h.src.earliestStart(ctx, c, q.window.Start.Unix()); err != nil {
		return nil, false, err
	}
	skip := q.skip
	err = c.jobsIn(ctx, jq, func(j *report.JobRow) bool {
		if len(q.teams) > 0 && !contains(q.teams, h.mapping.Team(j.Account, j.User)) {
			return true
		}
		switch {
		case state == "":
		case state == "running":
			if j.End != nil {
				return true
			}
		case j.State != state:
			return true
		}
		if skip > 0 {
			skip--
			return true
		}
		if len(rows) == q.limit {
			more = true
			return false
		}
		rows = append(rows, *j)
		return true
	})
	return rows, more, err
}

// GET /api/v1/jobs/running: jobs without an end, with their GPUs.
func (h *Handler) apiRunning(w http.ResponseWriter, r *http.Request) error {
	q, err := h.parseQuery(r.URL.Query())
	if err != nil {
		return err
	}
	if q.limit == 0 {
		q.limit = 500
	}
	out := struct {
		Clusters []string  `json:"clusters,omitempty"`
		Count    int       `json:"count"`
		Jobs     []jobJSON `json:"jobs"`
	}{Jobs: []jobJSON{}}
	err = h.withScope(h.src, r, q, func(c *conn) error {
		out.Clusters = q.scopeJSON()
		rs, err := c.running(r.Context(), q.filter.Clusters, q.limit)
		if err != nil {
			return err
		}
		for i := range rs {
			x := h.jobOut(&rs[i].JobRow)
			x.GPUList = rs[i].GPUList
			out.Jobs = append(out.Jobs, x)
		}
		return nil
	})
	out.Count = len(out.Jobs)
	return replyJSON(w, out, err)
}

// loadJob reads the job named by the path's cluster and id; unknown: 404.
func (h *Handler) loadJob(r *http.Request, c *conn) (*report.Detail, error) {
	sp, err := report.ParseJobSpec(r.PathValue("id"))
	if err != nil {
		return nil, badRequest("%s", err)
	}
	cluster := r.PathValue("cluster")
	det, err := h.jobRead.do(r.Context(), cluster+"\x00"+sp.String(), func() (*report.Detail, error) {
		return c.rep.Job(r.Context(), cluster, sp, h.o.Now())
	})
	if errors.Is(err, report.ErrNoJob) {
		return nil, &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("job %s not found in cluster %q", sp, r.PathValue("cluster"))}
	}
	return det, err
}

// GET /api/v1/jobs/{cluster}/{id}: what gpuacct job ID --json writes.
func (h *Handler) apiJob(w http.ResponseWriter, r *http.Request) error {
	var b bytes.Buffer
	err := h.withConn(r, func(c *conn) error {
		det, ms, err := h.jobWithMessages(r, c)
		if err != nil {
			return err
		}
		u, err := c.rep.RunResourcesOf(r.Context(), det)
		if err != nil {
			return err
		}
		// the team stays the user's own; only the name may be hidden
		return report.WriteJobJSONResources(&b, h.v.decision(det), h.mapping, h.v.user(det.Job.User), ms, u)
	})
	if err != nil {
		return err
	}
	return writeRaw(w, b.Bytes())
}

// seriesGPU is one GPU's samples in /api/v1/jobs/{cluster}/{id}/series.
type seriesGPU struct {
	Node   string         `json:"node"`
	Index  *int64         `json:"index"`
	UUID   string         `json:"uuid"`
	Points []report.Point `json:"points"`
}

// GET /api/v1/jobs/{cluster}/{id}/series: every GPU's samples.
func (h *Handler) apiSeries(w http.ResponseWriter, r *http.Request) error {
	out := struct {
		Job  string      `json:"job"`
		GPUs []seriesGPU `json:"gpus"`
	}{GPUs: []seriesGPU{}}
	err := h.withConn(r, func(c *conn) error {
		det, err := h.loadJob(r, c)
		if err != nil {
			return err
		}
		out.Job = det.Job.ID()
		for _, g := range det.GPUs {
			pts := g.Series
			if pts == nil {
				pts = []report.Point{}
			}
			out.GPUs = append(out.GPUs, seriesGPU{Node: g.Node, Index: g.Index, UUID: g.UUID, Points: pts})
		}
		return nil
	})
	return replyJSON(w, out, err)
}

// GET /api/v1/nodes: every node with its age and whether it is stale.
func (h *Handler) apiNodes(w http.ResponseWriter, r *http.Request) error {
	out := struct {
		Clusters    []string   `json:"clusters,omitempty"`
		StaleAfterS int64      `json:"stale_after_s"`
		Nodes       []nodeInfo `json:"nodes"`
	}{StaleAfterS: int64(h.o.Check.Stale.Seconds()), Nodes: []nodeInfo{}}
	q := &query{vals: r.URL.Query()}
	err := h.withScope(h.src, r, q, func(c *conn) error {
		out.Clusters = q.scopeJSON()
		ns, err := c.nodes(r.Context(), h.o.Now(), h.o)
		for _, n := range ns {
			if q.inScope(n.Cluster) {
				out.Nodes = append(out.Nodes, n)
			}
		}
		return err
	})
	return replyJSON(w, out, err)
}

// GET /api/v1/health: gpuacct check's findings; 503 when the database
// cannot be read.
func (h *Handler) apiHealth(w http.ResponseWriter, r *http.Request) error {
	out := struct {
		Clusters  []string `json:"clusters,omitempty"`
		Status    string   `json:"status"`
		Summary   string   `json:"summary"`
		Problems  []string `json:"problems"`
		DB        string   `json:"db"`
		CheckedAt string   `json:"checked_at"`
	}{DB: report.Redact(h.o.DB), CheckedAt: h.o.Now().UTC().Format(time.RFC3339)}
	q := &query{vals: r.URL.Query()}
	err := h.withScope(h.liveSrc, r, q, func(c *conn) error {
		out.Clusters = q.scopeJSON()
		o := h.o.Check
		o.Now, o.Clusters = h.o.Now(), q.filter.Clusters
		p, s, err := c.rep.Check(r.Context(), o)
		out.Problems, out.Summary = p, s
		return err
	})
	out.Status = "ok"
	if len(out.Problems) > 0 {
		out.Status = "degraded"
	} else {
		out.Problems = []string{}
	}
	return replyJSON(w, out, err)
}
