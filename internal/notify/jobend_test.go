package notify

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestGoldenJobEnd: the summary mailprog appends, in both languages:
// an ended job, one whose end has not arrived, one ended by the hooks'
// clock and ignored, one without samples.
func TestGoldenJobEnd(t *testing.T) {
	end := t0.Add(3 * time.Hour).Unix()
	reason := "test run (by root)"
	full := store.JobRow{Cluster: "c", JobID: 4242, GPUs: 4, Start: t0.Unix(), End: &end, Usage: store.Usage{AllocS: 4 * 10800, UsedS: 10800,
		IdleS: 16200, EnergyMJ: 5_400_000_000, SampleS: 4 * 10800}}
	running := full
	running.End = nil
	estimated := full
	estimated.EndEstimated, estimated.Ignored, estimated.IgnoreReason, estimated.Restart = true, true, &reason, 1
	unsampled := full
	unsampled.SampleS, unsampled.EnergyMJ = 0, 0
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range config.NotifyLanguages {
		t.Run(lang, func(t *testing.T) {
			var b strings.Builder
			for _, j := range []store.JobRow{full, running, estimated, unsampled} {
				b.WriteString(renderJobEnd(j, nil, lang, tokyo, t0.Add(2*time.Hour)))
			}
			got := b.String()
			checkGolden(t, "jobend."+lang+".golden", got)
		})
	}
}

// TestJobEndSummaryWaits: the summary waits for the job's end to reach
// the ledger; a job that never ends there by the deadline is summarised
// as far as the ledger knows, and says so; a job the ledger never had,
// a mail of another type and a user who opted out of jobend get none.
func TestJobEndSummaryWaits(t *testing.T) {
	st, l := ledger(t)
	seed(t, l.Loc(), []fjob{{job: 1, user: "alice", gpus: 1, start: t0, upTo: t0.Add(time.Hour), busy: idleAll}})
	n := newNotifier(t, testConfig(t, "", stamp()), st)
	clock := func() time.Time { return t0.Add(time.Hour) }
	ended := SlurmMail{Cluster: "c", Job: 1, User: "alice", MailType: "Ended"}
	summary := func(m SlurmMail, wait time.Duration) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		s, err := n.JobEndSummary(ctx, st, m, clock)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if s := summary(ended, 3*JobEndPoll); !strings.Contains(s, "has not reached the ledger yet") {
		t.Errorf("a job not ended by the deadline:\n%s", s)
	}
	for name, m := range map[string]SlurmMail{
		"unknown job": {Cluster: "c", Job: 2, User: "alice", MailType: "Ended"},
		"began":       {Cluster: "c", Job: 1, User: "alice", MailType: "Began"},
		"no job":      {MailType: "Ended"},
	} {
		if s := summary(m, 3*JobEndPoll); s != "" {
			t.Errorf("%s: summary %q, want none", name, s)
		}
	}
	// alice opts out of the job-end summary: Slurm's mail goes plain.
	notifyBatch(t, st, t0, func(b *store.Batch) error { return b.SetNotifyOptOut("alice", RuleJobEnd, true, t0) })
	if s := summary(ended, 3*JobEndPoll); s != "" {
		t.Errorf("opted out: summary %q, want none", s)
	}
	notifyBatch(t, st, t0, func(b *store.Batch) error { return b.SetNotifyOptOut("alice", RuleJobEnd, false, t0) })
	// The end arrives while the summary waits: the summary is the ended
	// job's, long before the (generous) deadline.
	done := make(chan string, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s, _ := n.JobEndSummary(ctx, st, ended, clock)
		done <- s
	}()
	ledgerdb.Tx(t, l.Loc(), func(exec func(q string, args ...any)) {
		exec(`UPDATE jobs SET end = ?, alloc_gpu_s = 3600 WHERE id = 1`, t0.Add(time.Hour).Unix())
	})
	if s := <-done; strings.Contains(s, "has not reached") || !strings.Contains(s, "GPU-hours:    1.00 GPU-h allocated") {
		t.Errorf("the summary once the end arrived:\n%s", s)
	}
}

// TestGoldenJobEndResources: an ended run with sacct's resources adds its CPU,
// memory and time, in both languages: one far off on every figure (with
// what to ask for), one on a site without job accounting gather ("not
// recorded", never 0) and no time limit, one close to what it asked for
// with a peak under a GiB and no --mem.
func TestGoldenJobEndResources(t *testing.T) {
	end := t0.Add(3 * time.Hour).Unix()
	j := store.JobRow{Cluster: "c", JobID: 4242, GPUs: 4, Start: t0.Unix(), End: &end, Usage: store.Usage{AllocS: 4 * 10800, UsedS: 10800,
		IdleS: 16200, EnergyMJ: 5_400_000_000, SampleS: 4 * 10800}}
	gpuMem := 0.62
	farOff := endResources{Resources: store.Resources{AllocCPUs: 4, Nodes: 1, Elapsed: 3 * time.Hour, TimeLimit: store.Known(12 * 3600),
		ReqMem: store.Known(32 << 30), TotalCPU: store.Known(10800_000), MaxRSS: store.Known(8_482_560_000)}, gpuMem: &gpuMem}
	none := endResources{Resources: store.Resources{AllocCPUs: 8, Nodes: 2, Elapsed: 3 * time.Hour, ReqMem: store.Known(16 << 30)}}
	close := endResources{Resources: store.Resources{AllocCPUs: 1, Nodes: 1, Elapsed: 40 * time.Second, TimeLimit: store.Known(60),
		TotalCPU: store.Known(36_500), MaxRSS: store.Known(300 << 20)}}
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	for _, lang := range config.NotifyLanguages {
		t.Run(lang, func(t *testing.T) {
			var b strings.Builder
			for _, u := range []endResources{farOff, none, close} {
				b.WriteString(renderJobEnd(j, &u, lang, tokyo, t0.Add(2*time.Hour)))
			}
			got := b.String()
			checkGolden(t, "jobend-resources."+lang+".golden", got)
		})
	}
}

// TestJobEndSummaryResources: the ledger's resources of the ended run reaches the
// mail; before sacct's reconcile brought it the mail goes without the
// section, saying nothing of CPU, memory or time.
func TestJobEndSummaryResources(t *testing.T) {
	st, l := ledger(t)
	seed(t, l.Loc(), []fjob{{job: 1, user: "alice", gpus: 1, start: t0, end: t0.Add(time.Hour), upTo: t0.Add(time.Hour), busy: idleAll}})
	n := newNotifier(t, testConfig(t, "", stamp()), st)
	ended := SlurmMail{Cluster: "c", Job: 1, User: "alice", MailType: "Ended"}
	summary := func() string {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		s, err := n.JobEndSummary(ctx, st, ended, func() time.Time { return t0.Add(time.Hour) })
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	before := summary()
	for _, word := range []string{"CPU:", "Memory:", "Time:", "not recorded"} {
		if strings.Contains(before, word) {
			t.Errorf("no resources yet: the summary has %q:\n%s", word, before)
		}
	}
	notifyBatch(t, st, t0, func(b *store.Batch) error {
		return b.SetResources(1, store.Resources{AllocCPUs: 2, Nodes: 1, Elapsed: time.Hour, TimeLimit: store.Known(4 * 3600),
			ReqMem: store.Known(4 << 30)})
	})
	s := summary()
	for _, want := range []string{
		"CPU:          not recorded (JobAcctGatherType is none)\n",
		"Memory:       not recorded (JobAcctGatherType is none)\n",
		"Time:         1 h of the 4 h limit (25.0 %); --time=01:15:00 would do\n",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("the summary lacks %q:\n%s", want, s)
		}
	}
}
