package report

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// TestNodeRollupsEqualHours: a report by node read from the node
// rollups (months, days, spans and edge hours) prints what the same report
// read hour by hour from rollup_hourly prints, row for row, over random
// windows (months of a zone, or any hours), periods, zones of whole,
// half and three-quarter hour offsets and clock changes, and filters.
func TestNodeRollupsEqualHours(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(35, 21))
	jobs, base, now := pScenario(r)
	path := buildSampledLedger(t, jobs, now)
	fast, slow := openTest(t, path), openTest(t, path)
	if !fast.nodeRollups {
		t.Fatal("a new ledger has no node rollups")
	}
	slow.nodeRollups = false
	zones := []string{"UTC", "Asia/Tokyo", "America/St_Johns", "Australia/Adelaide", "Asia/Kolkata", "Pacific/Chatham", "America/Los_Angeles"}
	periods := []timespec.Period{timespec.None, timespec.Month, timespec.Week, timespec.Day}
	filters := []struct {
		name  string
		f     Filter
		teams []string
	}{
		{name: "all"},
		{name: "partition", f: Filter{Partitions: []string{"long"}}},
		{name: "node", f: Filter{Nodes: []string{"n1"}}},
		{name: "user", f: Filter{Users: []string{"alice"}}},
		{name: "team", teams: []string{"nlp"}},
	}
	for i := range 28 {
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
		name := fmt.Sprintf("%s %s – %s %s %s", zone, w.Start.Format(time.DateTime), w.End.Format(time.DateTime), periodName(p), fl.name)
		req := Request{Kind: "nodes", Window: w, Period: p, Filter: fl.f, Teams: fl.teams}
		want, err := slow.Report(ctx, req)
		if err != nil {
			t.Fatalf("%s, hour by hour: %v", name, err)
		}
		if len(want.Rows) == 0 {
			t.Fatalf("%s: no rows: the test compares nothing", name)
		}
		got, err := fast.Report(ctx, req)
		if err != nil {
			t.Fatalf("%s, node rollups: %v", name, err)
		}
		if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-6)); d != "" {
			t.Errorf("%s: node rollups (-hour by hour +node rollups):\n%s", name, d)
		}
	}
}
