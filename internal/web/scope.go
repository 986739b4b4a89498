package web

import (
	"cmp"
	"net/http"
	"net/url"
	"slices"

	"github.com/aicloud/gpusuite/internal/report"
)

// scope resolves the request's ?clusters= (a list, or all) against the
// ledger's clusters on c, and narrows q's filter to it. With no choice
// the page reads the local cluster (cluster.name) when the ledger holds
// it, else every cluster: a page shows its picker rather than fail. An
// unknown cluster, and a ?clusters= that names none, is a 400 that names
// the known ones.
func (h *Handler) scope(c *conn, q *query) error {
	_, given := q.vals["clusters"]
	if _, ok := q.vals["cluster"]; ok {
		given = true
	}
	s, err := c.rep.Scope(report.ScopeRequest{Ask: list(q.vals, "clusters", "cluster"), Given: given, Param: "?clusters", Local: h.o.Cluster, DefaultAll: true})
	if err != nil {
		return err
	}
	q.scope, q.filter.Clusters = s, s.Filter()
	return nil
}

// clusterFilter is the filter of the scope alone, for the page reads
// that take no other filter.
func (q *query) clusterFilter() report.Filter {
	return report.Filter{Clusters: q.filter.Clusters}
}

// inScope reports whether a row of cluster c belongs to the page.
func (q *query) inScope(c string) bool {
	return q.filter.Clusters == nil || q.scope.Has(c)
}

// scopeJSON is the clusters an API answer covers, none when the ledger
// holds one (the answers stay as they were).
func (q *query) scopeJSON() []string {
	if len(q.scope.Known) <= 1 {
		return nil
	}
	return q.scope.Clusters
}

// picker fills the layout's cluster picker, heading and terminal line
// when the ledger holds several clusters: a GET form that keeps the
// page's other parameters, so that it works without a script.
func (h *Handler) picker(b *base, r *http.Request, q *query) {
	s := q.scope
	b.Several = s.Several()
	if len(s.Known) <= 1 {
		return
	}
	b.ScopeLabel = s.Label()
	all := s.All()
	b.Clusters = append(b.Clusters, option{Value: report.AllClusters, Label: "all clusters", Selected: all})
	for _, c := range s.Known {
		b.Clusters = append(b.Clusters, option{Value: c, Label: c, Selected: !all && len(s.Clusters) == 1 && s.Clusters[0] == c})
	}
	if !all && len(s.Clusters) > 1 {
		// Several but not all (?clusters=a,b): the list keeps them.
		b.Clusters = append(b.Clusters, option{Value: s.String(), Label: s.Label(), Selected: true})
	}
	for k, vs := range r.URL.Query() {
		if k == "clusters" || k == "cluster" {
			continue
		}
		for _, v := range vs {
			b.Keep = append(b.Keep, keepField{Name: k, Value: v})
		}
	}
	slices.SortFunc(b.Keep, func(a, b keepField) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Value, b.Value))
	})
	if b.CLI != "" {
		if all {
			b.CLI += " --all-clusters"
		} else {
			b.CLI += " -M " + shellQuote(s.String())
		}
	}
}

// keepField is a query parameter a form carries as a hidden input.
type keepField struct{ Name, Value string }

// clustersParam is ?clusters= of v, for links that keep the scope.
func clustersParam(v url.Values) string {
	if s := v.Get("clusters"); s != "" {
		return s
	}
	return v.Get("cluster")
}
