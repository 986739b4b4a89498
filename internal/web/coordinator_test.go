package web_test

import (
	"context"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/slurm"
	"github.com/aicloud/gpusuite/internal/web"
)

// coordinatorOfTeamA makes agentuser coordinator of team-a on the test
// Slurm (sacctmgr add coordinator, removed at the end), with the test's
// environment pointed at it.
func coordinatorOfTeamA(t *testing.T) {
	t.Helper()
	c := slurm.Get(t)
	for k, v := range c.Vars {
		t.Setenv(k, v)
	}
	c.Run(t, "", "sacctmgr", "-i", "add", "coordinator", "account=team-a", "names=agentuser")
	t.Cleanup(func() { c.Run(t, "", "sacctmgr", "-i", "remove", "coordinator", "account=team-a", "names=agentuser") })
}

// coordinatorRoles is the roles read from the test Slurm once agentuser
// coordinates team-a (coordinatorOfTeamA).
func coordinatorRoles(t *testing.T) *web.Roles {
	t.Helper()
	coordinatorOfTeamA(t)
	roles := web.NewRoles("sacctmgr", time.Minute, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err := roles.Refresh(context.Background()); err != nil {
		t.Fatalf("read the coordinators: %v", err)
	}
	return roles
}
