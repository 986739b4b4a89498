package web

import (
	"fmt"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// query is a request's report parameters, read the way gpuacct report
// reads its options.
type query struct {
	vals   url.Values
	loc    *time.Location
	window timespec.Window // as given (jobs)
	hours  timespec.Window // rounded to whole hours (aggregate reports)
	period timespec.Period
	// autoPeriod is true when no period was given and the page chose one.
	autoPeriod bool
	filter     report.Filter
	teams      []string
	units      table.Units
	limit      int
	// skip is how many matching jobs come before the first listed (a
	// team or user page past its first).
	skip int
	// scope is the clusters read (Handler.scope fills it and
	// filter.Clusters once the ledger's clusters are known).
	scope report.Scope
}

// parseQuery reads start, end, tz, period, units, limit and the filters.
// Every problem is a 400.
func (h *Handler) parseQuery(v url.Values) (*query, error) {
	q := &query{vals: v, loc: h.o.Location}
	if tz := v.Get("tz"); tz != "" {
		loc, err := timespec.LoadLocation(tz)
		if err != nil {
			return nil, badRequest("%s", cleanMsg(err))
		}
		q.loc = loc
	}
	w, err := timespec.Resolve(v.Get("start"), v.Get("end"), h.o.Now(), q.loc)
	if err != nil {
		return nil, badRequest("%s", cleanMsg(err))
	}
	q.window, q.hours = w, report.HourWindow(w)
	if q.period, err = timespec.ParsePeriod(v.Get("period")); err != nil {
		return nil, badRequest("%s", cleanMsg(err))
	}
	if err := timespec.CheckBuckets(q.hours, q.period); err != nil {
		return nil, badRequest("%s", cleanMsg(err))
	}
	if q.units, err = table.ParseUnits(v.Get("units")); err != nil {
		return nil, badRequest("%s", cleanMsg(err))
	}
	if s := v.Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 || n > report.MaxLimit {
			return nil, badRequest("limit %q is not a number from 1 to %d", s, report.MaxLimit)
		}
		q.limit = n
	}
	accts := list(v, "accounts", "account")
	for i := range accts {
		accts[i] = strings.ToLower(accts[i]) // as Slurm stores them
	}
	q.filter = report.Filter{Users: list(v, "users", "user"), Accounts: accts,
		Partitions: list(v, "partitions", "partition"), Nodes: list(v, "nodes", "node"), Models: list(v, "models", "model")}
	q.teams = list(v, "teams", "team")
	return q, nil
}

// list reads a comma-separated, repeatable parameter under either name.
func list(v url.Values, names ...string) []string {
	var out []string
	for _, n := range names {
		for _, s := range v[n] {
			for _, p := range strings.Split(s, ",") {
				if p = strings.TrimSpace(p); p != "" {
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// autoPeriod picks the chart's buckets when none was asked for: days up
// to two months, weeks up to half a year, else months.
func (q *query) autoPeriodFor() timespec.Period {
	if q.period != timespec.None {
		return q.period
	}
	q.autoPeriod = true
	d := q.hours.End.Sub(q.hours.Start)
	switch {
	case d <= 62*24*time.Hour:
		return timespec.Day
	case d <= 190*24*time.Hour:
		return timespec.Week
	case timespec.CheckBuckets(q.hours, timespec.Month) == nil:
		return timespec.Month
	}
	// Past 83 years of months the chart is one bar.
	return timespec.None
}

// checkTeams refuses a team nobody is in (400); a database error stays
// a database error (503).
func checkTeams(known, want []string) error {
	for _, t := range want {
		if !contains(known, t) {
			return badRequest("unknown team %q (teams: %s)", t, strings.Join(known, ", "))
		}
	}
	return nil
}

// checkNodes refuses a node that never shipped a record.
func checkNodes(known []nodeInfo, want []string) error {
	for _, n := range want {
		ok := false
		for _, k := range known {
			if k.Name == n || k.Cluster+"/"+k.Name == n {
				ok = true
			}
		}
		if !ok {
			return badRequest("unknown node %q (no record from it)", n)
		}
	}
	return nil
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

var stateRE = regexp.MustCompile(`^[a-z_]{1,32}$`)

// parseState reads the jobs list's state filter.
func parseState(s string) (string, error) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || stateRE.MatchString(s) {
		return s, nil
	}
	return "", badRequest("state %q is not a job state such as running, completed, failed, cancelled or unknown", s)
}

// parseSort reads the jobs list's sort order (as gpuacct report jobs --sort).
func parseSort(s string) (string, error) {
	switch s {
	case "", "start", "alloc", "eff", "idle":
		return s, nil
	}
	return "", badRequest("sort %q is not start, alloc, eff or idle", s)
}

// withParams is the current query string with some parameters replaced
// ("" deletes), for links that keep the chosen window and clusters.
func withParams(v url.Values, kv ...string) string {
	c := url.Values{}
	for _, k := range []string{"start", "end", "period", "tz"} {
		if s := v.Get(k); s != "" {
			c.Set(k, s)
		}
	}
	if s := clustersParam(v); s != "" {
		c.Set("clusters", s)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == "" {
			c.Del(kv[i])
		} else {
			c.Set(kv[i], kv[i+1])
		}
	}
	if len(c) == 0 {
		return ""
	}
	return "?" + c.Encode()
}

func fmtWindow(w timespec.Window) string {
	return fmt.Sprintf("%s – %s", w.Start.Format("2006-01-02 15:04"), w.End.Format("2006-01-02 15:04"))
}
