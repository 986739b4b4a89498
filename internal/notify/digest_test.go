package notify

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestDigest: each user with a job that ended in the week before gets
// one digest of it, in the first pass of the week, never again (a second
// pass, a restarted notifier); a job of another week is not in it; an
// opted-out user gets none.
func TestDigest(t *testing.T) {
	st, l := ledger(t)
	// t0 is Monday 2026-03-02: the week before 2026-03-09 is 2026-W10.
	now := t0.AddDate(0, 0, 7).Add(10 * time.Hour)
	seed(t, l.Loc(), []fjob{
		{job: 1, user: "alice", gpus: 4, start: t0.Add(time.Hour), end: t0.Add(3 * time.Hour), upTo: t0, busy: idleAll},
		{job: 2, user: "alice", gpus: 1, start: t0.Add(2 * time.Hour), end: t0.Add(4 * time.Hour), upTo: t0, busy: idleAll},
		{job: 3, user: "alice", gpus: 1, start: t0.AddDate(0, 0, 6), end: t0.AddDate(0, 0, 7).Add(time.Hour), upTo: t0, busy: idleAll},
		{job: 4, user: "bob", gpus: 1, start: t0.Add(-2 * time.Hour), end: t0.Add(time.Hour), upTo: t0, busy: idleAll},
		{job: 5, user: "carol", gpus: 1, start: t0.Add(time.Hour), end: t0.Add(2 * time.Hour), upTo: t0, busy: idleAll},
	})
	ledgerdb.Tx(t, l.Loc(), func(exec func(q string, args ...any)) {
		for _, j := range []struct {
			id                int64
			alloc, used, idle int64
		}{{1, 28800, 7200, 14400}, {2, 7200, 7000, 0}, {3, 3600, 0, 3600}, {4, 10800, 5400, 1800}, {5, 3600, 0, 3600}} {
			exec(`UPDATE jobs SET alloc_gpu_s = ?, used_gpu_s = ?, idle_gpu_s = ? WHERE id = ?`, j.alloc, j.used, j.idle, j.id)
			exec(`INSERT INTO job_hours (job, node_id, hour, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, jobs) VALUES (?, ?, 0, 0, 0, 0, ?, 0)`, j.id, j.id, j.alloc)
		}
	})
	notifyBatch(t, st, now, func(b *store.Batch) error { return b.SetNotifyOptOut("carol", "digest", true, now) })
	cfg := testConfig(t, "", "x")
	cfg.Idle.Enabled, cfg.Digest.Enabled = false, true
	// proj's leads: dave gets its digest (alice's and bob's jobs, not
	// carol's of another team), erin opted out.
	cfg.Digest.Leads = map[string][]string{"proj": {"dave", "erin"}, "other": {"frank"}}
	notifyBatch(t, st, now, func(b *store.Batch) error { return b.SetNotifyOptOut("erin", "all", true, now) })
	ledgerdb.Tx(t, l.Loc(), func(exec func(q string, args ...any)) { exec(`UPDATE jobs SET account = 'lab' WHERE id = 5`) })
	n := newNotifier(t, cfg, st)
	ctx := context.Background()
	res, err := n.Evaluate(ctx, now)
	if err != nil || res.Found != 3 || res.Added != 3 {
		t.Fatalf("first pass: %+v, %v; want alice's, bob's and proj's digests", res, err)
	}
	msgs, err := st.NotifyMessages(ctx, store.NotifyQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range msgs {
		keys = append(keys, m.Key+" "+m.Subject)
	}
	want := []string{
		"digest:2026-W10:team:proj:lead:dave [gpusuite] team proj, week 2026-W10: 13.00 GPU-h, 41.9 % used",
		"digest:2026-W10:user:bob [gpusuite] your GPU week 2026-W10: 3.00 GPU-h, 50.0 % used",
		"digest:2026-W10:user:alice [gpusuite] your GPU week 2026-W10: 10.00 GPU-h, 39.4 % used",
	}
	if d := cmp.Diff(want, keys); d != "" {
		t.Errorf("digests (-want +got):\n%s", d)
	}
	if res, err := n.Evaluate(ctx, now.Add(time.Hour)); err != nil || res.Found != 0 {
		t.Errorf("a second pass of the week: %+v, %v; want nothing looked at", res, err)
	}
	if res, err := newNotifier(t, cfg, st).Evaluate(ctx, now.AddDate(0, 0, 2)); err != nil || res.Found != 3 || res.Added != 0 {
		t.Errorf("a restarted notifier: %+v, %v; want the 3 found, none added", res, err)
	}
	// A dry run logs the week's digests once, not on each pass.
	cfg.DryRun = true
	dry := newNotifier(t, cfg, st)
	for i, want := range []int{3, 0} {
		if res, err := dry.Evaluate(ctx, now.Add(time.Duration(i)*time.Hour)); err != nil || res.Found != want {
			t.Errorf("dry run pass %d: %+v, %v; want %d found", i+1, res, err, want)
		}
	}
}

// TestGoldenDigest: the digest in each language.
func TestGoldenDigest(t *testing.T) {
	from := t0
	d := UserDigest{User: "alice", Week: "2026-W10", From: from, To: from.AddDate(0, 0, 7), WeekSums: WeekSums{Jobs: 5, AllocS: 45000, UsedS: 17100, IdleS: 16200, SampleS: 45000},
		Worst: []DigestJob{
			{ID: "4242", Cluster: "c", GPUs: 4, Usage: store.Usage{AllocS: 28800, UsedS: 7200, IdleS: 14400, SampleS: 28800}},
			{ID: "4250_3+1", Cluster: "c", GPUs: 1, Usage: store.Usage{AllocS: 3600, IdleS: 1800, SampleS: 3600}},
		}}
	for _, lang := range config.NotifyLanguages {
		t.Run(lang, func(t *testing.T) {
			subject, body := renderDigest(d, lang)
			got := "Subject: " + subject + "\n\n" + body
			checkGolden(t, "digest."+lang+".golden", got)
		})
	}
}

// TestGoldenTeamDigest: the team's digest to a lead in each language.
func TestGoldenTeamDigest(t *testing.T) {
	d := TeamDigest{Team: "vision", Week: "2026-W10", From: t0, To: t0.AddDate(0, 0, 7), WeekSums: WeekSums{Jobs: 7, AllocS: 72000, UsedS: 28800, IdleS: 21600, SampleS: 72000},
		Users: []UserDigest{
			{User: "alice", WeekSums: WeekSums{Jobs: 5, AllocS: 45000, UsedS: 17100, IdleS: 16200, SampleS: 45000}},
			{User: "bob", WeekSums: WeekSums{Jobs: 2, AllocS: 27000, UsedS: 11700, IdleS: 5400}},
		}}
	for _, lang := range config.NotifyLanguages {
		t.Run(lang, func(t *testing.T) {
			subject, body := renderTeamDigest(d, "dave", lang)
			got := "Subject: " + subject + "\n\n" + body
			checkGolden(t, "digest-team."+lang+".golden", got)
		})
	}
}
