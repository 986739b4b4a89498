package report

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// The budgets' days are the site's: a job from 23:00 to 01:00 in Tokyo
// counts on two Tokyo days (one UTC day), and a month in Tokyo starts at
// 15:00 UTC the day before.
func TestBudgetDaysInZone(t *testing.T) {
	const h = 3600
	path := buildLedger(t, []reportfixture.Job{
		// 31 Dec 14:00 – 16:00 UTC: 23:00 – 01:00 on 31 Dec/1 Jan in Tokyo,
		// December in UTC
		{ID: 1, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 2, Start: t0 - 10*h, End: t0 - 8*h},
		{ID: 2, User: "alice", Acct: "vision", Part: "gpu", Node: "n1", GPUs: 1, Start: t0 + 24*h, End: t0 + 30*h},
		{ID: 3, User: "bob", Acct: "vision", Part: "gpu", Node: "n2", GPUs: 4, Start: t0 + 24*h, End: t0 + 25*h},
		{ID: 4, User: "carol", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: t0, End: t0 + 2*h},
	}, time.Unix(t0+40*h, 0))
	db := openTest(t, path)
	ctx := context.Background()
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(t0+40*h, 0)

	t.Run("days", func(t *testing.T) {
		w := timespec.Window{Start: time.Date(2025, 12, 31, 0, 0, 0, 0, tokyo), End: now}
		days, err := db.BudgetDays(ctx, w, Filter{Accounts: []string{"vision"}})
		if err != nil {
			t.Fatal(err)
		}
		type row struct {
			Day, Account, User string
			AllocS             int64
		}
		var got []row
		for _, d := range days {
			got = append(got, row{d.Day.Format(time.RFC3339), d.Account, d.User, d.AllocS})
		}
		want := []row{
			{"2025-12-31T00:00:00+09:00", "vision", "alice", 2 * h},
			{"2026-01-01T00:00:00+09:00", "vision", "alice", 2 * h},
			{"2026-01-02T00:00:00+09:00", "vision", "alice", 6 * h},
			{"2026-01-02T00:00:00+09:00", "vision", "bob", 4 * h},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("days (-want +got):\n%s", diff)
		}
	})

	t.Run("burns", func(t *testing.T) {
		bs, err := budget.Parse([]budget.Entry{
			{Account: "vision", Period: "month", Amount: 20},
			{Account: "vision", User: "bob", Period: "month", Amount: 2},
			{Account: "nlp", Period: "range", From: "2025-12-01", To: "2025-12-31", Amount: 10},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			zone string
			want []float64 // used per budget
		}{
			// Tokyo's January has job 1's second hour, jobs 2 and 3; nlp's
			// December ended before job 4
			{"Asia/Tokyo", []float64{12, 4, 0}},
			// UTC's January has jobs 2 and 3; December held job 1 only
			{"UTC", []float64{10, 4, 0}},
		} {
			t.Run(tc.zone, func(t *testing.T) {
				loc, err := time.LoadLocation(tc.zone)
				if err != nil {
					t.Fatal(err)
				}
				burns, err := db.Burns(ctx, bs, now, loc, time.January)
				if err != nil {
					t.Fatal(err)
				}
				var got []float64
				for _, bd := range burns {
					got = append(got, bd.Used)
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("used (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]string{"alice", "bob"}, burns[0].Users); diff != "" {
					t.Errorf("vision's users (-want +got):\n%s", diff)
				}
			})
		}
	})

	t.Run("known accounts", func(t *testing.T) {
		known, err := db.BudgetAccounts(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]bool{}
		for _, a := range []string{"vision", "nlp", "ghost"} {
			got[a] = known(a)
		}
		if diff := cmp.Diff(map[string]bool{"vision": true, "nlp": true, "ghost": false}, got); diff != "" {
			t.Errorf("known (-want +got):\n%s", diff)
		}
	})
}

// TestBudgetAmount: a budget counts allocated GPU-hours, or billing
// units × hours from the rollups' billing-unit-seconds.
func TestBudgetAmount(t *testing.T) {
	u := Usage{AllocS: 7200, UsedS: 3600, Billing: 36000}
	for _, tc := range []struct {
		unit budget.Unit
		want float64
	}{{budget.GPUHours, 2}, {budget.Billing, 10}} {
		t.Run(string(tc.unit), func(t *testing.T) {
			if got := BudgetAmount(u, tc.unit); got != tc.want {
				t.Errorf("%v, want %v", got, tc.want)
			}
		})
	}
}
