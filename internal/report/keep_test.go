package report

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestKeepEqualsAllColumns: every report kind, reading only the columns
// it needs (keepOf: partitions and models from rollup_model_hour, or the
// node rollups before it), prints
// what it printed reading every column of every fact, over random windows,
// periods, zones off UTC by whole, half and three-quarter hours, filters,
// a team mapping and the billing TRES.
func TestKeepEqualsAllColumns(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(35, 2))
	jobs, base, now := pScenario(r)
	path := buildSampledLedger(t, jobs, now)
	fast, slow, nodes := openTest(t, path), openTest(t, path), openTest(t, path)
	slow.keepAll = true
	if !fast.modelRollups {
		t.Fatal("a new ledger has no rollup_model_hour")
	}
	nodes.modelRollups = false // the node rollups in its place, as before schema 25
	mapped, err := teams.Parse([]byte("[teams.cv]\naccounts=[\"vision\"]\n[teams.lang]\nusers=[\"carol\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	zones := []string{"UTC", "Asia/Tokyo", "America/St_Johns", "Asia/Kolkata"}
	periods := []timespec.Period{timespec.None, timespec.Month, timespec.Week, timespec.Day}
	filters := []struct {
		name  string
		f     Filter
		teams []string
	}{
		{name: "all"},
		{name: "partition", f: Filter{Partitions: []string{"long"}}},
		{name: "user", f: Filter{Users: []string{"alice"}}},
		{name: "account", f: Filter{Accounts: []string{"nlp"}}},
		{name: "node", f: Filter{Nodes: []string{"n1"}}},
		{name: "team", teams: []string{"nlp"}},
	}
	kinds := []string{"teams", "users", "accounts", "partitions", "nodes", "models", "tree", "top"}
	wholess := map[bool]int{} // reports by partition or model read without users: by model rollups or not
	for i := range 24 {
		zone := zones[i%len(zones)]
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		var w timespec.Window
		if i%2 == 0 {
			w = timespec.Window{Start: time.Date(2026, time.Month(2+r.IntN(2)), 1, 0, 0, 0, 0, loc), End: time.Date(2026, time.Month(4+r.IntN(2)), 1, 0, 0, 0, 0, loc)}
		} else {
			lo := base - 2*86400 + r.Int64N(10*86400)
			hi := now + 2*86400 - r.Int64N(10*86400)
			w = HourWindow(timespec.Window{Start: time.Unix(lo, 0).In(loc), End: time.Unix(hi, 0).In(loc)})
		}
		p := periods[r.IntN(len(periods))]
		fl := filters[i%len(filters)]
		var m *teams.Mapping
		tres := ""
		switch i % 3 {
		case 1:
			m = mapped
			if fl.teams != nil {
				fl.teams = []string{"lang"}
			}
		case 2:
			tres = TRESBilling
		}
		for _, kind := range kinds {
			name := fmt.Sprintf("%s %s – %s %s %s %s mapped=%v %s", zone, w.Start.Format(time.DateTime), w.End.Format(time.DateTime),
				periodName(p), kind, fl.name, m != nil, tres)
			req := Request{Kind: kind, Window: w, Period: p, Filter: fl.f, Teams: fl.teams, Mapping: m, TRES: tres}
			want, err := slow.Report(ctx, req)
			if err != nil {
				t.Fatalf("%s, every column: %v", name, err)
			}
			for _, db := range []*Ledger{fast, nodes} {
				got, err := db.Report(ctx, req)
				if err != nil {
					t.Fatalf("%s, kept columns (model rollups %v): %v", name, db.modelRollups, err)
				}
				if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-6)); d != "" {
					t.Errorf("%s: kept columns, model rollups %v (-every column +kept):\n%s", name, db.modelRollups, d)
				}
			}
			if kind == "partitions" || kind == "models" {
				f := fl.f
				f.keep = keepOf(req, kind, teamsOr(m))
				if len(fl.teams) > 0 {
					f.keep |= store.ColAccount
				}
				for _, db := range []*Ledger{fast, nodes} {
					if fp, err := db.planFacts(context.Background(), timespec.Buckets(w, p), f, false); err == nil && (fp.modelRollups || fp.nodeRollups) {
						wholess[db.modelRollups]++
					}
				}
			}
		}
	}
	for model, n := range wholess {
		if n < 8 {
			t.Errorf("only %d reports by partition or model read the %s: the test does not exercise them", n, map[bool]string{true: "model rollups", false: "node rollups"}[model])
		}
	}
	if len(wholess) < 2 {
		t.Errorf("the model or the node rollups never read: %v", wholess)
	}
}

func teamsOr(m *teams.Mapping) *teams.Mapping {
	if m == nil {
		return &teams.Mapping{}
	}
	return m
}
