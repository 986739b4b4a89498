package web

import (
	"bytes"
	"fmt"
	"net/http"
	"strings"
	"unicode"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
)

// maxUserName bounds the name a request logs in as: Slurm's own limit on
// a user name is far below it.
const maxUserName = 128

// mePage is /me: the logged-in user's running and recent jobs.
type mePage struct {
	base
	Who   string
	Lines []meLine
	API   string
}

// meLine is one line of `gpuacct jobs --user me`'s table; a run's line
// links to its page.
type meLine struct {
	Text, URL string
}

// GET /me: `gpuacct jobs --user me` for the logged-in user, over the
// last 7 days by default (running jobs included), each run linked to its
// page, whose notes say what went well and what did not.
func (h *Handler) mePage(w http.ResponseWriter, r *http.Request) error {
	name, err := h.me(w, r)
	if err != nil {
		return err
	}
	q, t, err := h.myJobs(r, name)
	if err != nil {
		return err
	}
	v := mePage{base: h.base(r, q, "My jobs"), Who: name, API: "/api/v1/me/jobs"}
	v.CLI = "gpuacct jobs --user me"
	for _, p := range [][2]string{{"start", "--since"}, {"end", "--until"}, {"tz", "--tz"}} {
		if s := r.URL.Query().Get(p[0]); s != "" {
			v.CLI += " " + p[1] + " " + shellQuote(s)
		}
	}
	var b bytes.Buffer
	if err := table.Write(&b, t, table.Options{Format: table.Aligned}); err != nil {
		return err
	}
	v.Lines = h.meLines(b.String(), t, q.scope)
	// The page is the logged-in user's: a browser that another user
	// logs in to next must not show it from its cache.
	w.Header().Set("Cache-Control", "no-store")
	h.render(w, http.StatusOK, "me", &v)
	return nil
}

// GET /api/v1/me/jobs: what `gpuacct jobs --user me --format json`
// writes for the logged-in user.
func (h *Handler) apiMyJobs(w http.ResponseWriter, r *http.Request) error {
	name, err := h.me(w, r)
	if err != nil {
		return err
	}
	_, t, err := h.myJobs(r, name)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := table.Write(&b, t, table.Options{Format: table.JSON}); err != nil {
		return err
	}
	w.Header().Set("Cache-Control", "no-store")
	return writeRaw(w, b.Bytes())
}

// me is the user r logged in as (who), refused when there is none (401)
// or when it is no name a user can have (400).
func (h *Handler) me(w http.ResponseWriter, r *http.Request) (string, error) {
	name, ok := h.who(r)
	if !ok {
		return "", h.needLogin(w, r.URL.Path+" is the logged-in user's")
	}
	if len(name) > maxUserName || strings.IndexFunc(name, func(c rune) bool { return !unicode.IsPrint(c) || c == ' ' || c == ',' }) >= 0 {
		return "", badRequest("the user this request logged in as is no user name: %q", truncate(name, 40))
	}
	return name, nil
}

// myJobs reads name's runs as `gpuacct jobs --user NAME` does: the
// window of r's start and end (default: the last 7 days), newest first.
// A user with no runs gets an empty table, not an unknown-user error.
func (h *Handler) myJobs(r *http.Request, name string) (*query, *table.Table, error) {
	v := r.URL.Query()
	if v.Get("start") == "" && v.Get("end") == "" {
		v.Set("start", "now-7days")
	}
	q, err := h.parseQuery(v)
	if err != nil {
		return nil, nil, err
	}
	if len(q.filter.Users)+len(q.filter.Accounts)+len(q.filter.Partitions)+len(q.filter.Nodes)+len(q.filter.Models)+len(q.teams) > 0 {
		return nil, nil, badRequest("%s takes start, end, tz, limit and clusters: it is the logged-in user's jobs", r.URL.Path)
	}
	var t *table.Table
	err = h.withScope(h.src, r, q, func(c *conn) error {
		q.filter.Users = []string{name}
		t, err = c.rep.JobEfficiencies(r.Context(), report.EffQuery{Window: q.window, Filter: q.filter, Mapping: h.mapping,
			Scope: q.scope, Sort: "start", Limit: q.limit, Now: h.o.Now()})
		return err
	})
	return q, t, err
}

// meLines are the lines of text, t written as an aligned table, each
// run's line linked to its job page. A run's line is the next that
// starts with its first cell: the table writes its rows in order.
func (h *Handler) meLines(text string, t *table.Table, s report.Scope) []meLine {
	jobCol, clusterCol := -1, -1
	for i, c := range t.Columns {
		switch c.Key {
		case "job":
			jobCol = i
		case "cluster":
			clusterCol = i
		}
	}
	var out []meLine
	r := 0
	for line := range strings.SplitSeq(strings.TrimRight(text, "\n"), "\n") {
		l := meLine{Text: line}
		if r < len(t.Rows) && !t.Rows[r].Footer && jobCol >= 0 && strings.HasPrefix(line, fmt.Sprint(t.Rows[r].Cells[0])+" ") {
			cells := t.Rows[r].Cells
			cluster := ""
			if clusterCol >= 0 {
				cluster, _ = cells[clusterCol].(string)
			} else if len(s.Clusters) == 1 {
				cluster = s.Clusters[0]
			}
			if id, ok := cells[jobCol].(string); ok && cluster != "" {
				l.URL = jobPath("/job", cluster, id)
			}
			r++
		}
		out = append(out, l)
	}
	return out
}

// truncate is s cut to at most n bytes, for an error that quotes input.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
