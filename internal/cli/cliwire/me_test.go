package cliwire

import (
	"errors"
	"os/user"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResolveMe: "me" among the names is the real uid's user, looked up
// once and only when asked for; a uid without a name is one clear error.
func TestResolveMe(t *testing.T) {
	lookup := func(uid string) (*user.User, error) {
		if uid == "1000" {
			return &user.User{Uid: uid, Username: "alice"}, nil
		}
		return nil, user.UnknownUserIdError(4242)
	}
	for _, tt := range []struct {
		name    string
		uid     int
		names   []string
		want    []string
		asks    int
		wantErr string
	}{
		{name: "none", uid: 1000, names: nil, want: nil},
		{name: "others", uid: 4242, names: []string{"bob"}, want: []string{"bob"}},
		{name: "me", uid: 1000, names: []string{"me"}, want: []string{"alice"}, asks: 1},
		{name: "me,alice", uid: 1000, names: []string{"me", "bob", "me"}, want: []string{"alice", "bob", "alice"}, asks: 1},
		{name: "unknown uid", uid: 4242, names: []string{"bob", "me"}, asks: 1,
			wantErr: "user me: uid 4242 has no user name; name the user instead: user: unknown userid 4242"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			asks := 0
			got, err := ResolveMe(tt.names, func() (string, error) { asks++; return Caller(tt.uid, lookup) })
			if tt.wantErr != "" {
				var unknown user.UnknownUserIdError
				if err == nil || err.Error() != tt.wantErr || !errors.As(err, &unknown) {
					t.Fatalf("ResolveMe(%q) error %v, want %q wrapping the lookup's", tt.names, err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ResolveMe(%q) (-want +got):\n%s", tt.names, diff)
			}
			if asks != tt.asks {
				t.Errorf("the caller was looked up %d times, want %d", asks, tt.asks)
			}
		})
	}
}
