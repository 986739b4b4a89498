package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/testkit/tlscert"
	"github.com/aicloud/gpusuite/internal/web"
	"github.com/aicloud/gpusuite/internal/webconfig"
)

// TestRolesFromSlurm: on the test Slurm, agentuser is made coordinator
// of team-a (sacctmgr add coordinator, removed at the end); under
// web.private_data, over basic-auth logins, agentuser then sees team-a's
// user alice (her jobs, her page, a filter naming her) and not team-b's
// bob, alice sees only herself, the admin everyone. A failed read of
// Slurm keeps the last answer and is logged once.
func TestRolesFromSlurm(t *testing.T) {
	coordinatorOfTeamA(t)

	// sacctmgr through a script that fails while a file exists: Slurm's
	// accounting down.
	dir := t.TempDir()
	down := filepath.Join(dir, "down")
	prog := filepath.Join(dir, "sacctmgr")
	script := "#!/bin/sh\n[ -e " + down + " ] && { echo 'sacctmgr: error: slurmdbd down' >&2; exit 1; }\nexec sacctmgr \"$@\"\n"
	if err := os.WriteFile(prog, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	roles := web.NewRoles(prog, time.Minute, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := context.Background()
	if err := roles.Refresh(ctx); err != nil {
		t.Fatalf("read the coordinators: %v", err)
	}
	if err := os.WriteFile(down, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := roles.Refresh(ctx); err == nil || !strings.Contains(err.Error(), "slurmdbd down") {
			t.Fatalf("refresh with slurmdbd down: %v, want its error", err)
		}
	}
	if n := strings.Count(logs.String(), "slurm coordinators not read"); n != 1 {
		t.Errorf("two failed reads logged %d times, want once:\n%s", n, logs.String())
	}

	t0 := reportfixture.T0
	now := time.Unix(t0+86400, 0)
	db := reportfixture.BuildLedger(t, []reportfixture.Job{
		{ID: 7, User: "alice", Acct: "team-a", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 8, User: "bob", Acct: "team-b", Part: "gpu", Node: "n2", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 9, User: "agentuser", Acct: "physics", Part: "gpu", Node: "n2", GPUs: 1, Start: t0, End: t0 + 3600},
	}, now)
	win := "start=2025-12-31&end=2026-01-02"
	logins := map[string]string{"alice": "pa", "bob": "pb", "agentuser": "pc", "boss": "pd"}
	cfg := tlscert.Write(t, false, logins, "")
	get := serveWeb(t, web.Options{DB: db, Location: time.UTC, Now: func() time.Time { return now }, PrivateData: true,
		Admins: []string{"boss"}, Users: webconfig.NewUsers(cfg.Path), Roles: roles}, cfg.Path, logins)
	if code, _ := get(t, "/api/v1/jobs?"+win, "mallory"); code != http.StatusUnauthorized {
		t.Errorf("a login the file does not list: %d, want 401", code)
	}
	for _, tc := range []struct {
		viewer string
		sees   []string // the users whose names and pages the viewer sees
	}{
		{"agentuser", []string{"agentuser", "alice"}},
		{"alice", []string{"alice"}},
		{"bob", []string{"bob"}},
		{"boss", []string{"agentuser", "alice", "bob"}},
	} {
		t.Run(tc.viewer, func(t *testing.T) {
			code, body := get(t, "/api/v1/jobs?"+win, tc.viewer)
			var doc struct {
				Jobs []struct{ User string } `json:"jobs"`
			}
			if err := json.Unmarshal([]byte(body), &doc); code != http.StatusOK || err != nil {
				t.Fatalf("jobs: %d %v %.300s", code, err, body)
			}
			var names []string
			for _, j := range doc.Jobs {
				if j.User != "(hidden)" {
					names = append(names, j.User)
				}
			}
			slices.Sort(names)
			if diff := cmp.Diff(tc.sees, names); diff != "" {
				t.Errorf("names in /api/v1/jobs (-want +got):\n%s", diff)
			}
			for _, u := range []string{"alice", "bob", "agentuser"} {
				want := http.StatusForbidden
				if slices.Contains(tc.sees, u) {
					want = http.StatusOK
				}
				for _, path := range []string{"/user/" + u + "?" + win, "/api/v1/jobs?user=" + u + "&" + win} {
					if code, body := get(t, path, tc.viewer); code != want {
						t.Errorf("%s: %d, want %d: %.200s", path, code, want, body)
					}
				}
			}
		})
	}
}
