package notify

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestAdminDigest: each address of notify.digest.admins gets the
// cluster's digest of the week once (not again on a second pass nor from
// a restarted notifier), with the week's wasters, the GPUs that showed a
// foreign process in the week (not one of another week), the stale
// nodes and the queue.
func TestAdminDigest(t *testing.T) {
	st, l := ledger(t)
	now := t0.AddDate(0, 0, 7).Add(10 * time.Hour)
	seed(t, l.Loc(), []fjob{
		{job: 1, user: "alice", gpus: 2, start: t0.Add(time.Hour), end: t0.Add(3 * time.Hour), upTo: t0, busy: idleAll},
		{job: 2, user: "bob", account: "lab", gpus: 1, start: t0.Add(time.Hour), end: t0.Add(2 * time.Hour), upTo: t0, busy: idleAll},
	})
	engine := store.EngineSQLite
	if l.URL != "" {
		engine = store.EnginePostgres
	}
	ledgerdb.Exec(t, l.Loc(), store.RowSamplesSQL(engine))
	ledgerdb.Tx(t, l.Loc(), func(exec func(q string, args ...any)) {
		exec(`UPDATE jobs SET alloc_gpu_s = 14400, used_gpu_s = 3600, idle_gpu_s = 7200 WHERE id = 1`)
		exec(`UPDATE jobs SET alloc_gpu_s = 3600, used_gpu_s = 3600, idle_gpu_s = 0 WHERE id = 2`)
		for _, id := range []int64{1, 2} {
			exec(`INSERT INTO job_hours (job, node_id, hour, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, jobs) VALUES (?, ?, 0, 0, 0, 0, 3600, 0)`, id, id)
		}
		// gpu01 heard from 5 minutes ago; gpu02 silent for two days.
		exec(`UPDATE nodes SET last_record = ? WHERE id = 1`, now.Add(-5*time.Minute).Unix())
		exec(`UPDATE nodes SET last_record = ? WHERE id = 2`, now.Add(-48*time.Hour).Unix())
		for i, at := range []time.Time{t0.Add(2 * time.Hour), t0.Add(2*time.Hour + 10*time.Second), t0.AddDate(0, 0, 7).Add(time.Hour)} {
			exec(`INSERT INTO samples (gpu_id, t_ms, interval_ms, procs, foreign_procs) VALUES (?, ?, 10000, 1, 1)`, 100, at.UnixMilli()+int64(i))
		}
		exec(`INSERT INTO passes (started, finished, ok, quarantined, refused) VALUES (?, ?, 1, 2, 1)`, t0.Add(time.Hour).Unix(), t0.Add(time.Hour).Unix())
	})
	// The samples, written as rows, packed as the ledger keeps them.
	if err := st.PackRowSamples(context.Background()); err != nil {
		t.Fatal(err)
	}
	cfg := testConfig(t, "", "x")
	cfg.Idle.Enabled, cfg.Digest.Enabled = false, true
	cfg.Digest.Admins = []string{"ops@example.org", "root@example.org"}
	n := newNotifier(t, cfg, st)
	ctx := context.Background()
	if res, err := n.Evaluate(ctx, now); err != nil || res.Added != 4 {
		t.Fatalf("first pass: %+v, %v; want alice's, bob's and the two admins' digests", res, err)
	}
	msgs, err := st.NotifyMessages(ctx, store.NotifyQuery{})
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	var body string
	for _, m := range msgs {
		if strings.Contains(m.Key, ":admins:") {
			keys = append(keys, m.Key+" "+m.Recipient+" "+m.Subject)
			body = m.Body
		}
	}
	want := []string{
		"digest:2026-W10:admins:root@example.org root@example.org [gpusuite] cluster week 2026-W10: 5.00 GPU-h, 2.00 GPU-h idle (40.0 %)",
		"digest:2026-W10:admins:ops@example.org ops@example.org [gpusuite] cluster week 2026-W10: 5.00 GPU-h, 2.00 GPU-h idle (40.0 %)",
	}
	if d := cmp.Diff(want, keys); d != "" {
		t.Errorf("admins' digests (-want +got):\n%s", d)
	}
	for _, line := range []string{
		"  alice           1 jobs       4.00 GPU-h       2.00 GPU-h idle (50.0 %)\n",
		"  proj            1 jobs       4.00 GPU-h       2.00 GPU-h idle (50.0 %)\n",
		"  c/gpu01 GPU 0: 2 samples, 2026-03-02 02:00 UTC to 2026-03-02 02:00 UTC\n",
		"Files ingest set aside in the week: 2 quarantined, 1 refused\n",
		"Nodes silent for over 15 min at 2026-03-09 10:00 UTC: 1\n  c/gpu02: last record 2026-03-07 10:00 UTC (48 h ago)\n",
		"Messages: 0 queued, 0 sent, 0 given up\n",
	} {
		if !strings.Contains(body, line) {
			t.Errorf("the digest lacks %q:\n%s", line, body)
		}
	}
	if strings.Contains(body, "bob ") {
		t.Errorf("bob left no GPU idle, yet is ranked:\n%s", body)
	}
	if res, err := newNotifier(t, cfg, st).Evaluate(ctx, now.Add(time.Hour)); err != nil || res.Found != 4 || res.Added != 0 {
		t.Errorf("a restarted notifier: %+v, %v; want the 4 found, none added", res, err)
	}
}

// TestGoldenAdminDigest: the admins' digest in each language.
func TestGoldenAdminDigest(t *testing.T) {
	idx := int64(3)
	due := t0.AddDate(0, 0, 7).Add(9 * time.Hour)
	d := AdminDigest{Week: "2026-W10", From: t0, To: t0.AddDate(0, 0, 7), WeekSums: WeekSums{Jobs: 40, AllocS: 720000, UsedS: 360000, IdleS: 216000, SampleS: 700000},
		Users: []UserDigest{
			{User: "alice", WeekSums: WeekSums{Jobs: 5, AllocS: 144000, UsedS: 28800, IdleS: 108000, SampleS: 144000}},
			{User: "bob", WeekSums: WeekSums{Jobs: 12, AllocS: 180000, UsedS: 90000, IdleS: 54000, SampleS: 180000}},
		},
		Teams: []UserDigest{{User: "vision", WeekSums: WeekSums{Jobs: 17, AllocS: 324000, UsedS: 118800, IdleS: 162000, SampleS: 324000}}},
		Foreign: []store.ForeignGPU{{Cluster: "c", Node: "gpu07", Index: &idx, Samples: 360,
			First: t0.Add(26 * time.Hour).UnixMilli(), Last: t0.Add(27 * time.Hour).UnixMilli()}},
		Quarantined: 2, Refused: 1,
		Stale:      []store.NodeLast{{Cluster: "c", Name: "gpu12", LastRecord: t0.AddDate(0, 0, 6).Unix()}},
		StaleCount: 1, Now: t0.AddDate(0, 0, 7).Add(10 * time.Hour), StaleAfter: 15 * time.Minute,
		Queue: store.NotifyQueue{Queued: 3, Sent: 120, Failed: 1, OldestDue: &due},
	}
	for _, lang := range config.NotifyLanguages {
		t.Run(lang, func(t *testing.T) {
			subject, body := renderAdminDigest(d, lang, time.UTC)
			got := "Subject: " + subject + "\n\n" + body
			checkGolden(t, "digest-admins."+lang+".golden", got)
		})
	}
}

// TestDigestRanking: the admins' lists rank by idle time and leave out
// whoever left none idle; a team's lead sees its users by GPU-time. Ties
// go by name, and each list is cut at its bound.
func TestDigestRanking(t *testing.T) {
	m := map[string]*UserDigest{}
	for i := range adminTop + 4 {
		name := fmt.Sprintf("u%d", i)
		m[name] = &UserDigest{User: name, WeekSums: WeekSums{AllocS: int64(100 - i/2), IdleS: float64(i % 3)}}
	}
	names := func(ds []UserDigest) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.User)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		got  func() []UserDigest
		want []string
	}{
		{"admins: most idle first", func() []UserDigest { return topIdle(m) }, []string{"u2", "u5", "u8", "u1", "u4"}},
		{"admins: none idle", func() []UserDigest {
			return topIdle(map[string]*UserDigest{"a": {User: "a", WeekSums: WeekSums{AllocS: 5}}})
		}, nil},
		{"lead: most GPU-time first", func() []UserDigest {
			d := TeamDigest{users: m}
			d.ranked()
			return d.Users
		}, []string{"u0", "u1", "u2", "u3", "u4", "u5", "u6", "u7", "u8"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, names(tc.got())); d != "" {
				t.Errorf("ranked (-want +got):\n%s", d)
			}
		})
	}
}
