package report

import (
	"context"
	"sort"

	"github.com/aicloud/gpusuite/internal/report/teams"
)

// KnownTeams is every team usage was ever recorded under, sorted: the
// mapping's names, else the mapped accounts, plus (unassigned). A team's
// color is its place in this list (plot.TeamColors), for the dashboard
// and the plots alike.
func (d *Ledger) KnownTeams(ctx context.Context, m *teams.Mapping) ([]string, error) {
	set := map[string]bool{}
	if m.Mapped() {
		for _, n := range m.Names() {
			set[n] = true
		}
		set[teams.Unassigned] = true
	} else {
		accts, err := d.Distinct(ctx, "account")
		if err != nil {
			return nil, err
		}
		for a := range accts {
			set[m.Team(a, "")] = true
		}
	}
	out := make([]string, 0, len(set))
	for t := range set {
		out = append(out, t)
	}
	sort.Strings(out)
	return out, nil
}
