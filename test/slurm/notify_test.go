package slurm_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/notify"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
	smtpsink "github.com/aicloud/gpusuite/test/smtp"
)

// TestIdleJobCancelled: on the real Slurm, alice's job whose GPU the
// ledger shows idle for hours is warned, then finally warned, then
// cancelled by the notifier with scancel, the reason in sacct's comment;
// each once, a later pass sends nothing. bob's job, of an exempt account,
// idle all the same, is never warned nor cancelled. The ledger is seeded
// with the samples an agent would have sent; the passes run at the
// times the escalation waits for.
func TestIdleJobCancelled(t *testing.T) {
	c := slurm.Get(t)
	slurm.EnsureUser(t, "alice")
	slurm.EnsureUser(t, "bob")
	for k, v := range c.Vars {
		t.Setenv(k, v) // scancel, scontrol and squeue reach this cluster
	}
	idle := c.Sbatch(t, "alice", "-A", "team-a", "--gres=gpu:1", "--comment", "prep", "--wrap", "sleep 600")
	exempt := c.Sbatch(t, "bob", "-A", "team-b", "--gres=gpu:1", "--wrap", "sleep 600")
	t.Cleanup(func() { cancelJobs(c, []uint64{idle, exempt}) })
	c.WaitState(t, idle, "RUNNING", 2*time.Minute)
	c.WaitState(t, exempt, "RUNNING", 2*time.Minute)

	now := time.Now()
	l := ledgerdb.NewLedger(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	start := now.Add(-3 * time.Hour).Truncate(5 * time.Minute)
	ledgerdb.Tx(t, l.Loc(), func(exec func(q string, args ...any)) {
		exec(`INSERT INTO nodes (id, cluster, name) VALUES (1, 'testcl', 'node1')`)
		for i, j := range []struct {
			id            uint64
			user, account string
		}{{idle, "alice", "team-a"}, {exempt, "bob", "team-b"}} {
			row := i + 1
			exec(`INSERT INTO jobs (id, cluster, job_id, user, account, partition, gpus, start, comment) VALUES (?, 'testcl', ?, ?, ?, 'gpu', 1, ?, '')`,
				row, j.id, j.user, j.account, start.Unix())
			exec(`INSERT INTO gpus (id, uuid, node_id, idx) VALUES (?, ?, 1, ?)`, row, fmt.Sprintf("GPU-notify-%d", row), row)
			exec(`INSERT INTO job_gpus (job, gpu_id, node_id) VALUES (?, ?, 1)`, row, row)
			// Idle samples from the start to past the last pass: the
			// agent kept sending them.
			for at := start; at.Before(now.Add(3 * time.Hour)); at = at.Add(5 * time.Minute) {
				exec(`INSERT INTO series_buckets (gpu_id, job, restart, bucket_ms, n, first_ms, end_ms, window_ms, idle_ms, util_w_ms, util_ms, util_share_w_ms,
 power_w_ms, power_ms, energy_mj, energy_n) VALUES (?, ?, 0, ?, 30, ?, ?, 300000, 300000, 0, 0, 0, 0, 0, 0, 0)`,
					row, j.id, at.UnixMilli(), at.UnixMilli(), at.Add(5*time.Minute).UnixMilli())
			}
		}
	})

	sink := smtpsink.Shared(t)
	host, port, _ := strings.Cut(sink.Addr, ":")
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	cfg := config.Default().Notify
	cfg.Enabled = true
	cfg.Mail.Host = host
	if cfg.Mail.Port, err = strconv.Atoi(port); err != nil {
		t.Fatal(err)
	}
	cfg.Mail.Address = "{user}-" + stamp + "@example.org"
	cfg.Idle.ExemptAccounts = []string{"team-b"}
	cfg.Idle.CancelAfter, cfg.Idle.FinalWarning = config.Dur(30*time.Minute), config.Dur(5*time.Minute)
	n, err := notify.New(cfg, st, notify.Options{IdleThreshold: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		at   time.Duration
		want notify.Result
	}{
		{"the warning", 0, notify.Result{Jobs: 2, Found: 1, Added: 1, Sent: 1}},
		{"again: nothing new", time.Minute, notify.Result{Jobs: 2, Found: 1}},
		{"the final warning", 31 * time.Minute, notify.Result{Jobs: 2, Found: 2, Added: 1, Sent: 1}},
		{"the cancel", 37 * time.Minute, notify.Result{Jobs: 2, Found: 2, Added: 1, Sent: 1}},
		{"after a restart: nothing new", 2 * time.Hour, notify.Result{Jobs: 2, Found: 2}},
	} {
		if tc.name == "after a restart: nothing new" {
			if n, err = notify.New(cfg, st, notify.Options{IdleThreshold: 1}); err != nil {
				t.Fatal(err)
			}
		}
		res, err := n.Pass(ctx, now.Add(tc.at))
		if err != nil || res != tc.want {
			t.Fatalf("%s: pass %+v, %v; want %+v", tc.name, res, err, tc.want)
		}
	}

	c.WaitGone(t, idle, 2*time.Minute)
	id := strconv.FormatUint(idle, 10)
	poll.Until(t, "sacct shows the cancel and its reason", 2*time.Minute, 500*time.Millisecond, func() (bool, string) {
		out := c.Run(t, "", "sacct", "-X", "-j", id, "-o", "State,Comment", "-P", "-n")
		return strings.HasPrefix(out, "CANCELLED") && strings.Contains(out, "prep | gpuacct: cancelled ") &&
			strings.Contains(out, "all 1 GPUs idle for") && strings.Contains(out, "(notify.idle.cancel_after)"), out
	})
	if got := strings.TrimSpace(c.Run(t, "", "squeue", "-h", "-j", strconv.FormatUint(exempt, 10), "-o", "%T")); got != "RUNNING" {
		t.Errorf("the exempt job is %q, want RUNNING", got)
	}

	mails := sink.To(t, "alice-"+stamp+"@example.org", 2)
	if len(mails) != 2 || !strings.Contains(mails[0].Subject, "idle for") || !strings.Contains(mails[1].Subject, "will be cancelled in 5 min") {
		t.Errorf("alice's mails %+v, want the warning then the final warning", mails)
	}
	kept, err := st.NotifyMessages(ctx, store.NotifyQuery{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range kept {
		if m.Job == nil || uint64(*m.Job) != idle || m.State != store.NotifySent {
			t.Errorf("kept %s about job %v in state %s; want only job %d's, sent", m.Key, m.Job, m.State, idle)
		}
	}
	if len(kept) != 3 {
		t.Errorf("%d messages kept, want the warning, the final warning and the cancel", len(kept))
	}
}
