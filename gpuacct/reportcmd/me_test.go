package reportcmd

import (
	"os/user"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
)

// TestUsersMe: --users me reports the caller as naming them does, beside
// other names; a caller without a name is one error, not "no user me".
func TestUsersMe(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := buildLedger(t, []fxJob{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: t0, End: t0 + 3600},
		{ID: 8, User: "bob", Acct: "nlp", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0, End: t0 + 7200},
		{ID: 9, User: "carol", Acct: "nlp", Part: "gpu", Node: "gpu02", GPUs: 1, Start: t0, End: t0 + 600},
	}, now)
	report := func(caller func() (string, error), users string) (string, error) {
		t.Helper()
		d, out, _ := testDeps(now, nil)
		d.Caller = caller
		err := run(t, d, "report", "users", dbOpt(path), "--start", "2026-01-01", "--end", "2026-01-02", "--users", users)
		return out.String(), err
	}
	alice := func() (string, error) { return "alice", nil }
	for _, tt := range []struct{ me, named string }{
		{"me", "alice"},
		{"me,bob", "alice,bob"},
		{"bob,me", "bob,alice"},
	} {
		t.Run(tt.me, func(t *testing.T) {
			want, err := report(alice, tt.named)
			if err != nil {
				t.Fatal(err)
			}
			got, err := report(alice, tt.me)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("--users %s (-%s +me):\n%s", tt.me, tt.named, diff)
			}
		})
	}
	t.Run("unknown uid", func(t *testing.T) {
		lookup := func(string) (*user.User, error) { return nil, user.UnknownUserIdError(4242) }
		_, err := report(func() (string, error) { return cliwire.Caller(4242, lookup) }, "me")
		if want := "user me: uid 4242 has no user name; name the user instead: user: unknown userid 4242"; err == nil || err.Error() != want {
			t.Errorf("--users me with a nameless uid: %v, want %q", err, want)
		}
	})
}
