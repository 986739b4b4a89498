package report

import (
	"context"
	"math/rand"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// The ledger fixtures are shared with gpuacct/reportcmd's tests.
type fxJob = reportfixture.Job

var (
	t0          = reportfixture.T0
	buildLedger = reportfixture.BuildLedger
	randomJobs  = reportfixture.RandomJobs
)

func openTest(t *testing.T, path string) *Ledger {
	t.Helper()
	db, err := OpenDB(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// Allocated GPU-hours in every report, period and zone equal Σ GPUs ×
// elapsed of the jobs, restarts and array tasks included, split exactly
// at period boundaries.
func TestAllocatedEqualsGPUsTimesElapsed(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	horizon := int64(90 * 86400)
	now := time.Unix(t0+horizon, 0)
	jobs := randomJobs(rng, 250, horizon)
	db := openTest(t, buildLedger(t, jobs, now))
	for _, zone := range []string{"UTC", "Asia/Tokyo", "America/New_York"} {
		loc, _ := time.LoadLocation(zone)
		w := timespec.Window{Start: time.Unix(t0, 0).In(loc).AddDate(0, 0, -1), End: now.In(loc).AddDate(0, 0, 1)}
		w = HourWindow(w)
		for _, p := range []timespec.Period{timespec.None, timespec.Day, timespec.Week, timespec.Month} {
			bs := timespec.Buckets(w, p)
			index := map[string]int{}
			for i, b := range bs {
				index[b.Label] = i
			}
			want := make([]int64, len(bs))
			for _, j := range jobs {
				end := j.End
				if end == 0 {
					end = now.Unix()
				}
				for i, s := range timespec.Split(j.Start, end, bs) {
					want[i] += int64(j.GPUs) * s
				}
			}
			for _, kind := range []string{"teams", "users", "nodes", "tree"} {
				tb, err := db.Report(context.Background(), Request{Kind: kind, Window: w, Period: p})
				if err != nil {
					t.Fatal(err)
				}
				got := make([]int64, len(bs))
				col := 1
				if p != timespec.None {
					col = 2
				}
				if kind == "users" || kind == "tree" {
					col++
				}
				for _, r := range tb.Rows {
					if r.Footer || r.Child {
						continue
					}
					i := 0
					if p != timespec.None {
						var ok bool
						if i, ok = index[r.Cells[0].(string)]; !ok {
							t.Fatalf("period label %q is no bucket's", r.Cells[0])
						}
					}
					got[i] += r.Cells[col].(int64)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("%s %s %s: allocated GPU-s per period (-Σ GPUs×elapsed +report):\n%s", zone, p, kind, diff)
				}
			}
		}
	}
}

func TestTeamsWithMapping(t *testing.T) {
	now := time.Unix(t0+3*86400, 0)
	jobs := []fxJob{
		{ID: 1, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: t0, End: t0 + 3600},
		{ID: 2, User: "carol", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 7200},
		{ID: 3, User: "zoe", Acct: "physics", Part: "gpu", Node: "gpu02", GPUs: 4, Start: t0, End: t0 + 1800},
	}
	db := openTest(t, buildLedger(t, jobs, now))
	m, err := teams.Parse([]byte("[teams.cv]\naccounts=[\"vision\"]\n[teams.lang]\nusers=[\"carol\"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	w := timespec.Window{Start: time.Unix(t0, 0).UTC(), End: now.UTC()}
	tb, err := db.Report(context.Background(), Request{Kind: "teams", Window: w, Mapping: m})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int64{}
	for _, r := range tb.Rows {
		if !r.Footer {
			got[r.Cells[0].(string)] = r.Cells[1].(int64)
		}
	}
	want := map[string]int64{"cv": 7200, "lang": 7200, teams.Unassigned: 4 * 1800}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPU-s per team (-want +got):\n%s", diff)
	}
	// Shares are of the whole cluster even when filtered.
	tb, err = db.Report(context.Background(), Request{Kind: "teams", Window: w, Mapping: m, Teams: []string{"lang"}})
	if err != nil {
		t.Fatal(err)
	}
	if share := tb.Rows[0].Cells[7].(float64); share < 33.3 || share > 33.4 {
		t.Errorf("lang's share %v%%, want a third", share)
	}
}
