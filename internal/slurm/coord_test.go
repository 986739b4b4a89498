package slurm_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/slurm"
)

// TestParseCoordination reads sacctmgr 22.05's real answers (testdata:
// bob coordinates team-a, agentuser root and so every account) and
// hand-made ones: a coordinator sees the users of their accounts and of
// the accounts below, no one else's; bad lines are skipped, a tree too
// deep is refused.
func TestParseCoordination(t *testing.T) {
	read := func(name string) string {
		t.Helper()
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	users := []string{"alice", "bob", "root", "agentuser", "carol", "lead"}
	deep := "a0||\n"
	for i := 1; i <= 70; i++ {
		deep += "a" + itoa(i) + "|a" + itoa(i-1) + "|\n"
	}
	for _, tc := range []struct {
		name           string
		coords, assocs string
		want           map[string][]string // coordinator: the users seen
		skipped        int
		err            string
	}{
		{name: "real", coords: read("sacctmgr-coord.txt"), assocs: read("sacctmgr-assoc.txt"),
			want: map[string][]string{"bob": {"alice", "root"}, "agentuser": {"alice", "bob", "root", "agentuser"}}},
		{name: "sub-account", coords: "lead|phys\n", assocs: "phys|root|\nhep|phys|\nhep||carol\nphys||bob\nother|root|\nother||alice\n",
			want: map[string][]string{"lead": {"bob", "carol"}}},
		{name: "none", coords: "alice|\nbob|\n", assocs: "a||alice\n", want: map[string][]string{}},
		{name: "bad lines", coords: "alice\n|team-a\nbob|team-a|x\nlead|team-a\n", assocs: "team-a||alice\n||bob\nx|y\n",
			want: map[string][]string{"lead": {"alice"}}, skipped: 5},
		{name: "too deep", coords: "lead|a0\n", assocs: deep, err: "deeper than 64 accounts"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, skipped, err := slurm.ParseCoordination([]byte(tc.coords), []byte(tc.assocs))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string][]string{}
			for _, coord := range users {
				for _, u := range users {
					if c.Sees(coord, u) {
						got[coord] = append(got[coord], u)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("seen (-want +got):\n%s", diff)
			}
			if skipped != tc.skipped {
				t.Errorf("skipped %d, want %d", skipped, tc.skipped)
			}
		})
	}
	var none *slurm.Coordination
	if none.Sees("bob", "alice") || none.Coordinators() != 0 {
		t.Error("a nil Coordination sees someone")
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
