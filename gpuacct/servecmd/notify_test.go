package servecmd

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
	smtpsink "github.com/aicloud/gpusuite/test/smtp"
)

// TestServeNotifies: with notify.enabled, serve's notifier mails the
// owner of a job whose GPU has been idle for hours, once; a serve started
// again on the same ledger (the first killed) sends nothing more.
func TestServeNotifies(t *testing.T) {
	sink := smtpsink.Shared(t)
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	now := time.Now()
	start := now.Add(-3 * time.Hour).Truncate(5 * time.Minute)
	ledgerdb.Tx(t, l.Loc(), func(exec func(q string, args ...any)) {
		exec(`INSERT INTO nodes (id, cluster, name) VALUES (1, 'cluster', 'gpu01')`)
		exec(`INSERT INTO jobs (id, cluster, job_id, user, account, partition, gpus, start) VALUES (1, 'cluster', 77, 'alice', 'proj', 'gpu', 1, ?)`, start.Unix())
		exec(`INSERT INTO gpus (id, uuid, node_id, idx) VALUES (1, 'GPU-1', 1, 0)`)
		exec(`INSERT INTO job_gpus (job, gpu_id, node_id) VALUES (1, 1, 1)`)
		for at := start; !at.After(now); at = at.Add(5 * time.Minute) {
			exec(`INSERT INTO series_buckets (gpu_id, job, restart, bucket_ms, n, first_ms, end_ms, window_ms, idle_ms, util_w_ms, util_ms, util_share_w_ms,
 power_w_ms, power_ms, energy_mj, energy_n) VALUES (1, 77, 0, ?, 30, ?, ?, 300000, 300000, 0, 0, 0, 0, 0, 0, 0)`,
				at.UnixMilli(), at.UnixMilli(), at.Add(5*time.Minute).UnixMilli())
		}
	})
	stamp := strconv.FormatInt(now.UnixNano(), 36)
	to := "alice-" + stamp + "@example.org"
	host, port, _ := strings.Cut(sink.Addr, ":")
	cfg := serveConfig(t, l)
	cfg.Notify.Enabled, cfg.Notify.Interval = true, config.Dur(10*time.Second)
	cfg.Notify.Mail.Host, cfg.Notify.Mail.Address = host, "{user}-"+stamp+"@example.org"
	if cfg.Notify.Mail.Port, err = strconv.Atoi(port); err != nil {
		t.Fatal(err)
	}
	for run := 1; run <= 2; run++ {
		var logs logs.Buffer
		m := &Main{Stderr: &logs, Getenv: func(string) string { return "" }, Config: cfg, Addr: make(chan string, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		addr, done := startServe(ctx, t, m, &logs)
		// The queue's gauge is set at the end of each notifier pass.
		waitFor(t, "a notifier pass with the message sent", func() bool {
			body, _ := get("http://" + addr + "/metrics")
			return metric(body, `gpusuite_notify_messages{state="sent"}`) == "1"
		})
		body, _ := get("http://" + addr + "/metrics")
		want := map[int]string{1: "1", 2: ""}[run]
		if got := metric(body, `gpusuite_notify_deliveries_total{channel="mail",outcome="sent",rule="idle"}`); got != want {
			t.Errorf("run %d: deliveries sent %q, want %q; log %s", run, got, want, logs.String())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run %d: serve: %v", run, err)
		}
		m.Close()
	}
	if got := sink.To(t, to, 0); len(got) != 1 || !strings.Contains(got[0].Body, "scancel 77\n") {
		t.Errorf("%d messages to %s, want 1 about job 77", len(got), to)
	}
}

// TestServeWithoutNotifier: a notifier that cannot start (its password
// file unreadable) is logged, and ingest goes on without it.
func TestServeWithoutNotifier(t *testing.T) {
	cfg := serveConfig(t, ledgerdb.NewLedger(t))
	cfg.Notify.Enabled = true
	cfg.Notify.Mail.User, cfg.Notify.Mail.PasswordFile = "gpusuite", filepath.Join(t.TempDir(), "missing")
	var logs logs.Buffer
	m := &Main{Stderr: &logs, Getenv: func(string) string { return "" }, Config: cfg, Addr: make(chan string, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, done := startServe(ctx, t, m, &logs)
	waitFor(t, "an ingest pass", func() bool {
		body, _ := get("http://" + addr + "/metrics")
		ok := metric(body, "gpuacct_ingest_last_success_timestamp_seconds")
		return ok != "" && ok != "0"
	})
	if !strings.Contains(logs.String(), "notifier not started; ingest goes on without it") || !strings.Contains(logs.String(), "notify.mail.password_file") {
		t.Errorf("log does not say why the notifier did not start:\n%s", logs.String())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
}
