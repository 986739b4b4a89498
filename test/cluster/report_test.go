package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestClusterReportEqualsSreport: over every hour since the cluster
// registered, with whatever the cluster lived through before (servers
// lost and revived, drained, cut off /data: slurmdbd keeps those as node
// events), `gpuacct report cluster -t seconds` prints the GPU-seconds
// `sreport cluster utilization` prints: allocated, down, planned down,
// idle, planned, reported. The ledger is serve's, once serve has closed
// and reconciled every run, copied so that one pass of its own reads the
// node events from sacctmgr now (serve reads them every five minutes).
func TestClusterReportEqualsSreport(t *testing.T) {
	m := get(t)
	waitUntil(t, "serve closed and reconciled every run", 2*time.Minute, func() (bool, string) {
		open := m.ledgerRows(t, `SELECT job_id || '+' || restart FROM jobs WHERE cluster = 'gsc' AND (end IS NULL OR sacct_checked = 0)`)
		return len(open) == 0, strings.Join(open, " ")
	})
	want, from, to := m.ClusterUtilization(t, "gsc")

	dir := t.TempDir()
	db := filepath.Join(dir, "gpuacct.db")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "sqlite3", m.db, ".backup "+db).CombinedOutput(); err != nil {
		t.Fatalf("copy serve's ledger: %v: %s", err, out)
	}
	for _, d := range []string{"incoming", "quarantine", "archive"} {
		if err := os.Mkdir(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "gpusuite.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`[cluster]
name = "gsc"

[store]
path = %q

[ingest]
incoming = %q
quarantine = %q
archive = %q
sacct = "sacct"
sacctmgr = "sacctmgr"
sacct_timeout = "60s"
`, db, filepath.Join(dir, "incoming"), filepath.Join(dir, "quarantine"), filepath.Join(dir, "archive"))), 0o644); err != nil {
		t.Fatal(err)
	}
	copyOf := *m
	copyOf.head = cfg
	copyOf.gpuacctRun(t, "ingest")
	const ts = "2006-01-02T15:04:05"
	out := copyOf.gpuacctRun(t, "report", "cluster", "-t", "seconds", "-P", "-n", "--start", from.Format(ts), "--end", to.Format(ts))
	g := strings.Split(strings.TrimSpace(out), "|")
	if len(g) != 10 || g[0] != "gsc" {
		t.Fatalf("gpuacct report cluster: %q, want gsc and nine figures", out)
	}
	t.Logf("sreport over %s – %s: %s", from.Format(ts), to.Format(ts), want)
	if got := strings.Join(g[1:7], "|"); got != want {
		events := m.Run(t, "", "sacctmgr", "-P", "-n", "show", "event", "cluster=gsc", "Start="+from.Format(ts), "End="+to.Format(ts),
			"Format=NodeName,Start,End,State,Reason,TRES")
		t.Errorf("allocated|down|planned down|idle|planned|reported GPU-seconds over %s – %s:\ngpuacct %s\nsreport %s\nslurmdbd's events:\n%s",
			from.Format(ts), to.Format(ts), got, want, events)
	}
}
