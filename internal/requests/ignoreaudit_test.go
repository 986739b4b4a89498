package requests

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

// The ledger keeps who made the last decision on a run and when, an
// unignore's too (its reason is cleared): the dashboard's form and the
// command leave the same audit.
func TestIgnoreAudit(t *testing.T) {
	e := newQueueEnv(t)
	e.job(t, 7, "")
	file := func(action, by string) string {
		t.Helper()
		e.now = e.now.Add(time.Minute)
		r := &Request{Action: action, Jobs: []string{"7+0"}, Cluster: "c", Reason: "benchmark", By: by, UID: 0, Time: e.now}
		if _, err := Submit(e.dir, r); err != nil {
			t.Fatal(err)
		}
		e.applyTagged(t)
		return "request/ignore/" + r.ID + ".json"
	}
	for _, tc := range []struct {
		action, by string
		ignored    bool
		reason     string
	}{
		{Ignore, "alice", true, "benchmark (by alice, 2026-03-02 10:01Z)"},
		{Unignore, "bob", false, ""},
	} {
		t.Run(tc.action, func(t *testing.T) {
			key := file(tc.action, tc.by)
			got, err := e.st.LastDecision(context.Background(), "c", 7, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := store.Decision{Ignored: tc.ignored, Reason: tc.reason, Request: key, By: tc.by, At: e.now}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("last decision (-want +got):\n%s", diff)
			}
		})
	}
}
