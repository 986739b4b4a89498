package slurm_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
	smtpsink "github.com/aicloud/gpusuite/test/smtp"
)

// TestMailProgOnSlurm: with gpuacct mailprog as the real slurmctld's
// MailProg (the harness's etc/mailprog), a job submitted with
// --mail-type=END gets Slurm's own end mail, Slurm's subject to Slurm's
// recipient, with the job's GPU summary from the ledger appended, and
// the mail is recorded for the writer's outbox.
func TestMailProgOnSlurm(t *testing.T) {
	c := slurm.Get(t)
	slurm.EnsureUser(t, "alice")
	gpuacct := slurm.Binary(t, "gpuacct")
	dir := t.TempDir()
	l := ledgerdb.NewLedger(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	sink := smtpsink.Shared(t)
	host, port, _ := strings.Cut(sink.Addr, ":")
	stamp := strconv.FormatInt(time.Now().UnixNano(), 36)
	reqs := filepath.Join(dir, "requests")
	key := fmt.Sprintf("path = %q", l.Path)
	if l.URL != "" {
		key = fmt.Sprintf("url = %q", l.URL)
	}
	cfg := filepath.Join(dir, "gpusuite.toml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf("[store]\n%s\n[report]\ntz = \"UTC\"\nrequests = %q\n[notify.mail]\nhost = %q\nport = %s\n",
		key, reqs, host, port)), 0o644); err != nil {
		t.Fatal(err)
	}
	// slurmctld gives its MailProg no arguments of ours and a scrubbed
	// environment: the wrapper names the config.
	mailprog := filepath.Join(c.Vars["GPUSUITE_SLURM_DIR"], "etc", "mailprog")
	wrapper := fmt.Sprintf("#!/bin/sh\nGPUSUITE_CONFIG=%s exec %s mailprog --wait 30s \"$@\" 2>>%s\n", cfg, gpuacct, filepath.Join(dir, "mailprog.log"))
	if err := os.WriteFile(mailprog, []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.WriteFile(mailprog, []byte("#!/bin/sh\nexit 0\n"), 0o755) })

	to := "alice-" + stamp + "@example.org"
	id := c.Sbatch(t, "alice", "-A", "team-a", "--gres=gpu:1", "--mail-type=END", "--mail-user="+to, "--wrap", "sleep 2")
	// The ledger has the job as the writer would once its records came:
	// an hour of one GPU, a quarter used.
	ledgerdb.Tx(t, l.Loc(), func(exec func(q string, args ...any)) {
		now := time.Now().Unix()
		exec(`INSERT INTO jobs (id, cluster, job_id, user, account, partition, gpus, start, end, state, alloc_gpu_s, used_gpu_s, idle_gpu_s, energy_mj)
 VALUES (1, 'testcl', ?, 'alice', 'team-a', 'gpu', 1, ?, ?, 'completed', 3600, 900, 1800, 720000000)`, id, now-3600, now)
		exec(`INSERT INTO job_hours (job, node_id, hour, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, jobs) VALUES (1, 1, 0, 3600, 900, 1800, 3600, 1)`)
	})
	got := sink.To(t, to, 1)
	log, _ := os.ReadFile(filepath.Join(dir, "mailprog.log"))
	if len(got) != 1 {
		t.Fatalf("%d mails to %s, want Slurm's end mail; mailprog said: %s", len(got), to, log)
	}
	m := got[0]
	if want := fmt.Sprintf("Slurm Job_id=%d ", id); !strings.HasPrefix(m.Subject, want) || !strings.Contains(m.Subject, "Ended") {
		t.Errorf("subject %q, want Slurm's end subject %q...", m.Subject, want)
	}
	for _, want := range []string{fmt.Sprintf("-- gpusuite: the GPUs of job %d (cluster testcl) --\n", id), "GPU-hours:    1.00 GPU-h allocated\n",
		"Utilization:  25.0 % (GPU time used / allocated)\n", "Idle:         50.0 % of the GPU time (0.50 GPU-h)\n", "Energy:       0.200 kWh\n"} {
		if !strings.Contains(m.Body, want) {
			t.Errorf("body lacks %q:\n%s\nmailprog said: %s", want, m.Body, log)
		}
	}

	if _, err := requests.Apply(ctx, st, requests.Options{Dir: reqs, Now: time.Now(), Trusted: func(uid int) bool { return uid == 0 }}); err != nil {
		t.Fatal(err)
	}
	job := int64(id)
	kept, err := st.NotifyMessages(ctx, store.NotifyQuery{Job: &job})
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) != 1 || kept[0].Rule != "jobend" || kept[0].State != store.NotifySent || kept[0].Recipient != to {
		t.Errorf("outbox %+v, want the end mail recorded sent", kept)
	}
}
