package slurm_test

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/slurm"
)

// TestCoordinatedAccounts: a coordinator's accounts are those they
// coordinate and those below them (sacctmgr 22.05's real answers in
// testdata: bob coordinates team-a, agentuser root), none for anyone
// else.
func TestCoordinatedAccounts(t *testing.T) {
	coords, err := os.ReadFile("testdata/sacctmgr-coord.txt")
	if err != nil {
		t.Fatal(err)
	}
	assocs, err := os.ReadFile("testdata/sacctmgr-assoc.txt")
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := slurm.ParseCoordination(coords, assocs)
	if err != nil {
		t.Fatal(err)
	}
	sub, _, err := slurm.ParseCoordination([]byte("lead|phys\n"), []byte("phys|root|\nhep|phys|\nhep||carol\nother|root|\n"))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		c     *slurm.Coordination
		coord string
		want  []string
	}{
		{"team-a", c, "bob", []string{"team-a"}},
		{"root and so every account", c, "agentuser", []string{"physics", "root", "team-a", "team-b"}},
		{"coordinates none", c, "alice", nil},
		{"sub-account", sub, "lead", []string{"hep", "phys"}},
		{"nil", nil, "bob", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.c.Accounts(tc.coord)); diff != "" {
				t.Errorf("Accounts(%q) (-want +got):\n%s", tc.coord, diff)
			}
		})
	}
}
