package report

import (
	"slices"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// AllClusters is the -M value (and ?clusters= value) that reads every
// cluster of the ledger, like sacct's -M all.
const AllClusters = "all"

// Scope is the clusters a read covers. Several clusters may share one
// ledger; a read covers one of them unless asked for more, so that the
// figures of two clusters are never summed by accident.
type Scope struct {
	// Clusters are the clusters read, sorted; empty only when the
	// ledger holds none yet.
	Clusters []string
	// Known are all the ledger's clusters, sorted.
	Known []string
}

// Several reports whether the read covers more than one cluster: reports
// then show a cluster column so that rows of two clusters stay apart.
func (s Scope) Several() bool { return len(s.Clusters) > 1 }

// All reports whether every cluster of the ledger is read.
func (s Scope) All() bool { return len(s.Clusters) == len(s.Known) }

// Has reports whether cluster c is read.
func (s Scope) Has(c string) bool { return slices.Contains(s.Clusters, c) }

// Filter is the store filter of the scope: none when every cluster is
// read (the ledger's only cluster, or all of them).
func (s Scope) Filter() []string {
	if s.All() {
		return nil
	}
	return s.Clusters
}

// Label names the scope for titles: "gpu1", "gpu1, gpu2" or "all
// clusters (gpu1, gpu2)".
func (s Scope) Label() string {
	names := strings.Join(s.Clusters, ", ")
	if s.All() && len(s.Known) > 1 {
		return "all clusters (" + names + ")"
	}
	return names
}

// Title names the scope in a report's title, "" when the ledger holds
// one cluster (titles stay as they were).
func (s Scope) Title() string {
	if len(s.Known) <= 1 {
		return ""
	}
	return s.Label()
}

// on is " on " and the title, or "".
func (s Scope) on() string {
	if t := s.Title(); t != "" {
		return " on " + t
	}
	return ""
}

// meta is the scope as a table's meta field (the JSON's "clusters"),
// none when the ledger holds one cluster.
func (s Scope) meta() []table.KV {
	if len(s.Known) <= 1 {
		return nil
	}
	return []table.KV{{Key: "clusters", Value: slices.Clone(s.Clusters)}}
}

// windowMeta is a report's meta fields: its kind and window, then extra
// (its period), then the scope's.
func windowMeta(kind string, w timespec.Window, s Scope, extra ...table.KV) []table.KV {
	m := append([]table.KV{{Key: "report", Value: kind}, {Key: "start", Value: w.Start.Format(time.RFC3339)},
		{Key: "end", Value: w.End.Format(time.RFC3339)}}, extra...)
	return append(m, s.meta()...)
}

// Clusters are the clusters that shipped records to the ledger, sorted.
func (d *Ledger) Clusters() []string { return slices.Clone(d.clusters) }

// MaxClusterNames bounds how many names one -M or ?clusters= may give:
// far more than any ledger holds, and a request cannot make the check
// of its names long.
const MaxClusterNames = 64

// ScopeRequest is how a caller asks for a scope.
type ScopeRequest struct {
	// Ask are the clusters named (-M a,b; ?clusters=a,b); "all" in it
	// takes every cluster.
	Ask []string
	// Given: the choice was given, even if it names nothing (-M '',
	// ?clusters=,): that is refused rather than taken as no choice.
	Given bool
	// All is --all-clusters.
	All bool
	// Param is how errors name the choice: "--clusters" when empty,
	// "?clusters" for the web.
	Param string
	// Local is this host's cluster (SLURM_CLUSTER_NAME, else
	// cluster.name); it is the default when the ledger holds it.
	Local string
	// DefaultAll takes every cluster when several share the ledger, none
	// was asked for and Local is not one of them: the dashboard shows its
	// picker instead of failing, and a job id is looked for on each
	// (Job fails when two have it). Otherwise that is an error.
	DefaultAll bool
}

// Scope resolves r against the ledger's clusters. A name the ledger does
// not hold, and several clusters with no choice, are BadInput: one line
// that names the known clusters and says how to choose.
func (d *Ledger) Scope(r ScopeRequest) (Scope, error) {
	return ResolveScope(d.path, d.clusters, r)
}

// ResolveScope is Scope over known, the clusters of the ledger at path,
// for a reader that holds no Ledger (gpuacct note list). It is linear in the
// names asked, and refuses more than MaxClusterNames before looking at
// any.
func ResolveScope(path string, known []string, r ScopeRequest) (Scope, error) {
	s := Scope{Known: slices.Clone(known)}
	param := r.Param
	if param == "" {
		param = "--clusters"
	}
	if len(r.Ask) > MaxClusterNames {
		return s, badInput("%s: %d names, at most %d: name fewer, or all", param, len(r.Ask), MaxClusterNames)
	}
	if r.Given && len(r.Ask) == 0 && !r.All {
		return s, badInput("%s '': name a cluster (its clusters: %s) or %s", param, strings.Join(known, ", "), AllClusters)
	}
	isKnown := set(known)
	seen := make(map[string]bool, len(r.Ask))
	var ask []string
	all := r.All
	for _, c := range r.Ask {
		if c == AllClusters {
			all = true
			continue
		}
		if seen[c] {
			continue
		}
		seen[c] = true
		if !isKnown[c] {
			if len(known) == 0 {
				return s, badInput("%s: no cluster %q in %s yet (nothing ingested)", param, c, path)
			}
			hint := suggest(c, isKnown)
			if hint == "" {
				hint = " (its clusters: " + strings.Join(known, ", ") + ")"
			}
			return s, badInput("%s: no cluster %q in %s%s", param, c, path, hint)
		}
		ask = append(ask, c)
	}
	switch {
	case all:
		if len(ask) > 0 {
			return s, badInput("%s %s: name clusters or all, not both", param, strings.Join(append(ask, AllClusters), ","))
		}
		s.Clusters = slices.Clone(known)
	case len(ask) > 0:
		slices.Sort(ask)
		s.Clusters = ask
	case len(known) <= 1:
		s.Clusters = slices.Clone(known)
	case slices.Contains(known, r.Local):
		s.Clusters = []string{r.Local}
	case r.DefaultAll:
		s.Clusters = slices.Clone(known)
	default:
		return s, ambiguous(known)
	}
	return s, nil
}

func ambiguous(clusters []string) error {
	return badInput("the ledger holds clusters %s: choose with -M NAME or --all-clusters", strings.Join(clusters, ", "))
}

// set is xs as a set.
func set(xs []string) map[string]bool {
	m := make(map[string]bool, len(xs))
	for _, x := range xs {
		m[x] = true
	}
	return m
}

// String is the scope as -M takes it back.
func (s Scope) String() string {
	if s.All() && len(s.Known) > 1 {
		return AllClusters
	}
	return strings.Join(s.Clusters, ",")
}
