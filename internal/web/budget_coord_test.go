package web_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestBudgetCoordinator: on the test Slurm, agentuser is made coordinator
// of team-a (removed at the end); under web.private_data they then see
// team-a's budget, page and JSON, as its members do, and not team-b's.
func TestBudgetCoordinator(t *testing.T) {
	roles := coordinatorRoles(t)

	t0 := reportfixture.T0
	now := time.Unix(t0+86400, 0)
	db := reportfixture.BuildLedger(t, []reportfixture.Job{
		{ID: 7, User: "alice", Acct: "team-a", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 8, User: "bob", Acct: "team-b", Part: "gpu", Node: "n2", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 9, User: "agentuser", Acct: "physics", Part: "gpu", Node: "n2", GPUs: 1, Start: t0, End: t0 + 3600},
	}, now)
	bs, err := budget.Parse([]budget.Entry{
		{Account: "team-a", Period: "month", Amount: 10},
		{Account: "team-b", Period: "month", Amount: 10},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h, err := web.New(web.Options{DB: db, Location: time.UTC, Now: func() time.Time { return now }, Budgets: bs, PrivateData: true,
		UserHeader: "X-Remote-User", Admins: []string{"boss"}, Roles: roles})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); h.Close() })
	for _, tt := range []struct {
		user, team string
		want       int
	}{
		{"agentuser", "team-a", http.StatusOK},
		{"agentuser", "team-b", http.StatusForbidden},
		{"alice", "team-a", http.StatusOK},
		{"bob", "team-a", http.StatusForbidden},
	} {
		for _, path := range []string{"/team/" + tt.team + "/budget", "/api/v1/budget/" + tt.team} {
			t.Run(tt.user+path, func(t *testing.T) {
				if code, b := getAs(t, srv.URL+path, tt.user); code != tt.want {
					t.Errorf("GET %s as %q: %d, want %d\n%.400s", path, tt.user, code, tt.want, b)
				}
			})
		}
	}
}
