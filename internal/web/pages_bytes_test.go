package web_test

import (
	"bytes"
	"fmt"
	"path/filepath"
	"testing"
)

// TestPageBytes: every byte of the accounting pages and of the ledger's
// API answers, on a fixed ledger and clock, is what it was
// (testdata/bytes/NAME, -update), so that a change to the pages' code or
// templates that is meant to keep them cannot change what a browser or
// a script receives. TestClusterPages reads the same pages as text.
func TestPageBytes(t *testing.T) {
	db := twoClusterLedger(t)
	srv := clusterServer(t, db, "")
	for _, tt := range []struct{ name, path string }{
		{"overview-all.html", "/accounting?" + clusterWindow},
		{"overview-gpu1.html", "/accounting?clusters=gpu1&" + clusterWindow},
		{"team-all.html", "/team/nlp?clusters=all&" + clusterWindow},
		{"team-gpu1.html", "/team/nlp?clusters=gpu1&" + clusterWindow},
		{"user-all.html", "/user/alice?" + clusterWindow},
		{"user-gpu2.html", "/user/alice?clusters=gpu2&" + clusterWindow},
		{"job.html", "/job/gpu2/7"},
		{"jobs.json", "/api/v1/jobs?" + clusterWindow},
		{"jobs-gpu1.json", "/api/v1/jobs?clusters=gpu1&" + clusterWindow},
		{"running.json", "/api/v1/jobs/running"},
		{"nodes.json", "/api/v1/nodes"},
		{"health.json", "/api/v1/health"},
		{"report-teams.json", "/api/v1/report/teams?" + clusterWindow},
		{"unknown-cluster.json", "/api/v1/nodes?clusters=gpu9"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, b := getJSON(t, srv.URL+tt.path, nil)
			b = bytes.ReplaceAll(b, []byte(db), []byte("LEDGER")) // a temporary file's name
			golden(t, filepath.Join("bytes", tt.name), append([]byte(fmt.Sprintf("HTTP %d\n", code)), b...))
		})
	}
}
