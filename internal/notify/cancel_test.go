package notify

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestCancelEscalation: with cancel_after on, a run whose GPUs all stay
// idle gets the idle warning, cancel_after after it went the final
// warning, final_warning after that went the cancel; each once, each
// only after the one before was delivered. A run using one of its GPUs,
// an exempt one, and all of it with the cancel off, never go past the
// warning; an owner's opt-out does not spare the run the warnings.
func TestCancelEscalation(t *testing.T) {
	st, l := ledger(t)
	now := t0.Add(3 * time.Hour)
	upTo := now.Add(3 * time.Hour) // fresh samples all along
	seed(t, l.Loc(), []fjob{
		{job: 1, user: "alice", gpus: 2, start: t0, upTo: upTo, busy: idleAll},
		{job: 2, user: "bob", gpus: 2, start: t0, upTo: upTo, busy: func(g int, _ time.Time) bool { return g == 1 }},
		{job: 3, user: "carol", account: "bench", gpus: 1, start: t0, upTo: upTo, busy: idleAll},
		{job: 4, user: "judy", gpus: 1, start: t0, upTo: upTo, busy: idleAll},
	})
	notifyBatch(t, st, now, func(b *store.Batch) error { return b.SetNotifyOptOut("judy", "all", true, now) })
	ctx := context.Background()
	// step evaluates at at, marks every queued message sent at at, and
	// returns the keys it added.
	step := func(n *Notifier, at time.Time) []string {
		t.Helper()
		before, err := st.NotifyMessages(ctx, store.NotifyQuery{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := n.Evaluate(ctx, at); err != nil {
			t.Fatal(err)
		}
		after, err := st.NotifyMessages(ctx, store.NotifyQuery{})
		if err != nil {
			t.Fatal(err)
		}
		var added []string
		notifyBatch(t, st, at, func(b *store.Batch) error {
			for _, m := range after {
				if !slices.ContainsFunc(before, func(o store.NotifyMessage) bool { return o.ID == m.ID }) {
					added = append(added, m.Key)
				}
				if m.State == store.NotifyQueued {
					if err := b.MarkNotifySent(m.ID, at); err != nil {
						return err
					}
				}
			}
			return nil
		})
		slices.Sort(added)
		return added
	}
	cfg := testConfig(t, "", "x")
	cfg.Idle.ExemptAccounts = []string{"bench"}
	off := newNotifier(t, cfg, st)
	if d := cmp.Diff([]string{"idle:c:1+0:user:alice", "idle:c:2+0:user:bob"}, step(off, now)); d != "" {
		t.Errorf("cancel off: the warnings (-want +got):\n%s", d)
	}
	cfg.Idle.ExemptAccounts = []string{"bench"}
	cfg.Idle.CancelAfter, cfg.Idle.FinalWarning = config.Dur(30*time.Minute), config.Dur(5*time.Minute)
	n := newNotifier(t, cfg, st)
	for _, tc := range []struct {
		name  string
		at    time.Duration
		added []string
	}{
		{"the opted-out owner's warning", 0, []string{"idle:c:4+0:user:judy"}},
		{"before cancel_after", 29 * time.Minute, nil},
		{"cancel_after after the warning", 31 * time.Minute, []string{"cancel:final:c:1+0:user:alice", "cancel:final:c:4+0:user:judy"}},
		{"before final_warning", 35 * time.Minute, nil},
		{"final_warning after the final warning", 37 * time.Minute, []string{"cancel:scancel:c:1+0", "cancel:scancel:c:4+0"}},
		{"again", 2 * time.Hour, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.added, step(n, now.Add(tc.at))); d != "" {
				t.Errorf("added (-want +got):\n%s", d)
			}
		})
	}
	m, ok, err := st.NotifyByKey(ctx, "cancel:scancel:c:1+0")
	if err != nil || !ok || m.Channel != ChannelSlurm || m.Body != "gpuacct: cancelled 2026-03-02 03:37Z, all 2 GPUs idle for 3 h 37 min (notify.idle.cancel_after)" {
		t.Errorf("the cancel kept: %+v %v %v", m, ok, err)
	}
}

// TestGoldenFinalWarning: the final warning in each language.
func TestGoldenFinalWarning(t *testing.T) {
	j := IdleJob{Cluster: "c", JobID: 4242, User: "alice", Account: "proj", Part: "gpu", GPUs: 2, Threshold: 1, IdleAfter: time.Hour,
		Idle: []IdleGPU{{Node: "gpu01", UUID: "GPU-a", For: 150 * time.Minute}, {Node: "gpu01", UUID: "GPU-b", For: 155 * time.Minute}}}
	for _, lang := range config.NotifyLanguages {
		t.Run(lang, func(t *testing.T) {
			subject, body := renderFinal(j, lang, 15*time.Minute)
			got := "Subject: " + subject + "\n\n" + body
			checkGolden(t, "final."+lang+".golden", got)
		})
	}
}

func TestAppendComment(t *testing.T) {
	long := string(make([]byte, 2000))
	for _, tc := range []struct{ name, old, want string }{
		{"none", "", "r"},
		{"kept", "prep run", "prep run | r"},
		{"cut", long, long[:maxComment-4] + " | r"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := appendComment(tc.old, "r"); got != tc.want || len(got) > maxComment {
				t.Errorf("appendComment = %q (%d bytes), want %q", got, len(got), tc.want)
			}
		})
	}
}

// BenchmarkCancelRule: the idle rule with the cancel on over 1,000
// running jobs whose GPUs are all idle, each past its warning and its
// final warning: the escalation's reads per job on top of the idle rule.
// go test -run - -bench CancelRule ./internal/notify/
func BenchmarkCancelRule(b *testing.B) {
	st, l := ledger(b)
	now := t0.Add(12 * time.Hour)
	var jobs []fjob
	for i := range 1000 {
		jobs = append(jobs, fjob{job: int64(i + 1), user: fmt.Sprintf("u%d", i%50), gpus: 4, start: t0, upTo: now, busy: idleAll})
	}
	seed(b, l.Loc(), jobs)
	cfg := testConfig(b, "", "bench")
	cfg.Idle.CancelAfter, cfg.Idle.FinalWarning = config.Dur(time.Hour), config.Dur(15*time.Minute)
	n := newNotifier(b, cfg, st)
	ctx := context.Background()
	sendAll := func(at time.Time) {
		if _, err := n.Evaluate(ctx, at); err != nil {
			b.Fatal(err)
		}
		msgs, err := st.NotifyMessages(ctx, store.NotifyQuery{})
		if err != nil {
			b.Fatal(err)
		}
		notifyBatch(b, st, at, func(bt *store.Batch) error {
			for _, m := range msgs {
				if m.State == store.NotifyQueued {
					if err := bt.MarkNotifySent(m.ID, at); err != nil {
						return err
					}
				}
			}
			return nil
		})
	}
	sendAll(now.Add(-3 * time.Hour))
	sendAll(now.Add(-time.Hour))
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		b.Fatal(err)
	}
	// Dry run: decides the 1,000 cancels each time, keeps none.
	n.cfg.DryRun = true
	b.ResetTimer()
	for range b.N {
		res, err := n.Evaluate(ctx, now)
		if err != nil || res.Found != 2000 {
			b.Fatalf("%+v, %v", res, err)
		}
	}
	b.StopTimer()
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		b.Fatal(err)
	}
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}
