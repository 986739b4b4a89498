package store

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// idleFixtureJob is a job run for the idle reads: its GPUs' 5-minute
// buckets from start to upTo, busy (not idle) while busy(gpu, t) says so.
type idleFixtureJob struct {
	job        int64
	user       string
	gpus       int
	start, end time.Time // end zero: running
	upTo       time.Time
	busy       func(gpu int, t time.Time) bool
}

// seedIdle writes jobs, nodes, GPUs and buckets as the writer would have.
func seedIdle(t testing.TB, s *Ledger, now time.Time, jobs []idleFixtureJob) {
	t.Helper()
	ctx := context.Background()
	b, err := s.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	exec := func(q string, args ...any) {
		t.Helper()
		if _, err := b.exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, j := range jobs {
		node := fmt.Sprintf("n%d", j.job)
		exec(`INSERT INTO nodes (id, cluster, name) VALUES (?, 'c', ?)`, j.job, node)
		var end any
		if !j.end.IsZero() {
			end = j.end.Unix()
		}
		exec(`INSERT INTO jobs (id, cluster, job_id, user, account, partition, gpus, start, end, comment) VALUES (?, 'c', ?, ?, 'acct', 'gpu', ?, ?, ?, 'run')`,
			j.job, j.job, j.user, j.gpus, j.start.Unix(), end)
		for g := range j.gpus {
			id := j.job*100 + int64(g)
			exec(`INSERT INTO gpus (id, uuid, node_id, idx) VALUES (?, ?, ?, ?)`, id, fmt.Sprintf("GPU-%d-%d", j.job, g), j.job, g)
			exec(`INSERT INTO job_gpus (job, gpu_id, node_id) VALUES (?, ?, ?)`, j.job, id, j.job)
			for at := j.start.Truncate(5 * time.Minute); at.Before(j.upTo); at = at.Add(5 * time.Minute) {
				idle := int64(300_000)
				if j.busy(g, at) {
					idle = 0
				}
				exec(`INSERT INTO series_buckets (gpu_id, job, restart, bucket_ms, n, first_ms, end_ms, window_ms, idle_ms, util_w_ms, util_ms, util_share_w_ms,
 power_w_ms, power_ms, energy_mj, energy_n) VALUES (?, ?, 0, ?, 30, ?, ?, 300000, ?, 0, 0, 0, 0, 0, 0, 0)`,
					id, j.job, at.UnixMilli(), at.UnixMilli(), at.Add(5*time.Minute).UnixMilli(), idle)
			}
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestIdleGPUs: the running runs' GPUs with their last window counted,
// and when an idle one was last busy.
func TestIdleGPUs(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	now := notifyT0.Add(3 * time.Hour)
	never := func(int, time.Time) bool { return false }
	seedIdle(t, s, now, []idleFixtureJob{
		{job: 1, user: "alice", gpus: 2, start: notifyT0, upTo: now, busy: func(g int, at time.Time) bool { return g == 1 }},
		{job: 2, user: "bob", gpus: 1, start: now.Add(-30 * time.Minute), upTo: now, busy: never},
		{job: 3, user: "carol", gpus: 1, start: notifyT0, end: now.Add(-time.Minute), upTo: now, busy: never},
		{job: 4, user: "dave", gpus: 1, start: notifyT0, upTo: now.Add(-10 * time.Minute), busy: func(_ int, at time.Time) bool { return at.Before(notifyT0.Add(time.Hour)) }},
	})
	from := now.Add(-time.Hour)
	got, err := s.IdleGPUs(ctx, from.UnixMilli(), 100)
	if err != nil {
		t.Fatal(err)
	}
	idx := func(i int64) *int64 { return &i }
	row := func(job int64, user string, gpus int64, g int64, window, busy int64, newest time.Time) IdleGPU {
		return IdleGPU{Row: job, Cluster: "c", JobID: job, User: user, Account: "acct", Partition: "gpu", Comment: "run", Start: notifyT0.Unix(),
			JobGPUs: gpus, Node: fmt.Sprintf("n%d", job), Index: idx(g), UUID: fmt.Sprintf("GPU-%d-%d", job, g), GPUID: job*100 + g,
			WindowMs: window, BusyMs: busy, NewestMs: newest.UnixMilli()}
	}
	// Newest start first, then the newest run.
	want := []IdleGPU{
		row(4, "dave", 1, 0, 3_000_000, 0, now.Add(-10*time.Minute)),
		row(1, "alice", 2, 0, 3_600_000, 0, now),
		row(1, "alice", 2, 1, 3_600_000, 3_600_000, now),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("IdleGPUs (-want +got):\n%s", diff)
	}
	idle := []IdleGPU{got[1], got[0]}
	if err := s.IdleSince(ctx, idle); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int64{notifyT0.UnixMilli(), notifyT0.Add(time.Hour).UnixMilli()}, []int64{idle[0].IdleSinceMs, idle[1].IdleSinceMs}); diff != "" {
		t.Errorf("IdleSince (-want +got):\n%s", diff)
	}
}

// BenchmarkIdleGPUs reads the idle window of 1,000 running jobs of 4
// GPUs each, which have run 12 hours (the idle rule's read of a pass).
func BenchmarkIdleGPUs(b *testing.B) {
	s, err := Open(context.Background(), Options{Path: b.TempDir() + "/ledger.db"})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	now := notifyT0.Add(12 * time.Hour)
	var jobs []idleFixtureJob
	for i := range 1000 {
		jobs = append(jobs, idleFixtureJob{job: int64(i + 1), user: fmt.Sprintf("u%d", i%50), gpus: 4, start: notifyT0, upTo: now,
			busy: func(g int, _ time.Time) bool { return g != 0 }})
	}
	seedIdle(b, s, now, jobs)
	b.ResetTimer()
	for range b.N {
		gs, err := s.IdleGPUs(context.Background(), now.Add(-time.Hour).UnixMilli(), 1000)
		if err != nil || len(gs) != 4000 {
			b.Fatalf("%d GPUs, %v", len(gs), err)
		}
	}
}

// TestNotifyByKey: the message kept under a key, with its delivery, and
// none for a key never kept.
func TestNotifyByKey(t *testing.T) {
	s, _ := openLedger(t)
	sentAt := notifyT0.Add(time.Minute)
	notifyBatch(t, s, notifyT0, func(b *Batch) {
		id, _, err := b.EnqueueNotify(notifyMsg("idle:c:7+0:user:alice", "alice", 7))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.MarkNotifySent(id, sentAt); err != nil {
			t.Fatal(err)
		}
	})
	for _, tc := range []struct {
		key   string
		ok    bool
		state string
	}{{"idle:c:7+0:user:alice", true, NotifySent}, {"idle:c:8+0:user:alice", false, ""}} {
		t.Run(tc.key, func(t *testing.T) {
			m, ok, err := s.NotifyByKey(context.Background(), tc.key)
			if err != nil || ok != tc.ok || m.State != tc.state {
				t.Fatalf("NotifyByKey = %+v, %v, %v; want ok %v state %q", m, ok, err, tc.ok, tc.state)
			}
			if ok && (m.SentAt == nil || !m.SentAt.Equal(sentAt)) {
				t.Errorf("sent at %v, want %v", m.SentAt, sentAt)
			}
		})
	}
}
