package report

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestJobDecision: gpuacct job says who last ignored a run or counted it
// again, and when, in the report's zone (its JSON: ignore_by, and
// ignore_at in UTC), from the ledger's record of requests filed and
// applied as gpuacct ignore and unignore do; a run nobody decided on
// reads as before.
func TestJobDecision(t *testing.T) {
	ctx := context.Background()
	t0 := time.Unix(reportfixture.T0, 0).UTC()
	loc := reportfixture.BuildLedger(t, []reportfixture.Job{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: reportfixture.T0 + 100, End: reportfixture.T0 + 3700},
	}, t0.Add(2*time.Hour))
	st, err := store.Open(ctx, store.At(loc))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	db, err := OpenDB(ctx, loc, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	dir := filepath.Join(t.TempDir(), "requests")
	if err := requests.MakeQueues(dir, -1); err != nil {
		t.Fatal(err)
	}
	euid := os.Geteuid()
	cet := time.FixedZone("CET", 3600)

	for _, tc := range []struct {
		name       string
		action, by string // the request filed and applied first; "": none
		reason     string
		at         time.Time
		line       string // the text's second line
		json       map[string]any
	}{
		{name: "no decision", line: "  user alice, account vision, team vision, partition gpu",
			json: map[string]any{"ignored": false}},
		{"ignored by bob", requests.Ignore, "bob", "benchmark", t0.Add(3 * time.Hour),
			"  IGNORED: left out of every report; ignored by bob at 2026-01-01 04:00:00, reason: benchmark",
			map[string]any{"ignored": true, "ignore_reason": "benchmark (by bob, 2026-01-01 03:00Z)", "ignore_by": "bob", "ignore_at": "2026-01-01T03:00:00Z"}},
		{"counted again by carol", requests.Unignore, "carol", "", t0.Add(4*time.Hour + 30*time.Minute),
			"  counted again by carol at 2026-01-01 05:30:00",
			map[string]any{"ignored": false, "ignore_by": "carol", "ignore_at": "2026-01-01T04:30:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.action != "" {
				r := &requests.Request{Action: tc.action, Jobs: []string{"7"}, Cluster: "c1", Reason: tc.reason, By: tc.by, UID: euid, Time: tc.at}
				if _, err := requests.Submit(dir, r); err != nil {
					t.Fatal(err)
				}
				if _, err := requests.Apply(ctx, st, requests.Options{Dir: dir, Now: tc.at.Add(time.Minute), Cluster: "c1",
					Trusted: func(uid int) bool { return uid == euid }}); err != nil {
					t.Fatal(err)
				}
			}
			det, err := db.Job(ctx, "c1", JobSpec{ID: 7, Restart: -1}, tc.at.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			var text bytes.Buffer
			if err := WriteJobText(&text, det, &teams.Mapping{}, cet, 100); err != nil {
				t.Fatal(err)
			}
			lines := strings.SplitN(text.String(), "\n", 3)
			if diff := cmp.Diff(tc.line, lines[1]); diff != "" {
				t.Errorf("second line (-want +got):\n%s\n%s", diff, text.String())
			}
			var js bytes.Buffer
			if err := WriteJobJSON(&js, det, &teams.Mapping{}, ""); err != nil {
				t.Fatal(err)
			}
			var all map[string]any
			if err := json.Unmarshal(js.Bytes(), &all); err != nil {
				t.Fatal(err)
			}
			got := map[string]any{}
			for _, k := range []string{"ignored", "ignore_reason", "ignore_by", "ignore_at"} {
				if v, ok := all[k]; ok {
					got[k] = v
				}
			}
			if diff := cmp.Diff(tc.json, got); diff != "" {
				t.Errorf("JSON's ignore fields (-want +got):\n%s", diff)
			}
		})
	}
}
