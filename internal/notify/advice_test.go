package notify

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestAdvice: the advice in each user's digest, from the runs that
// ended in the week: a small one-GPU run told the MIG slice it fits, a
// run of 4 GPUs that used one, and time limits far above the run time
// over 3 runs; runs over the thresholds, and a user with only 2 long
// limits, get none; with advice off, nobody gets any.
func TestAdvice(t *testing.T) {
	st, l := ledger(t)
	now := t0.AddDate(0, 0, 7).Add(10 * time.Hour)
	start, end := t0.Add(time.Hour), t0.Add(3*time.Hour)
	jobs := []fjob{
		{job: 1, user: "alice", gpus: 1}, // 10 %, 8 000 MiB peak: fits 1g.18gb
		{job: 2, user: "alice", gpus: 1}, // 10 %, 40 000 MiB peak: does not
		{job: 3, user: "alice", gpus: 1}, // 50 %: busy enough
		{job: 4, user: "alice", gpus: 4}, // 3 of 4 GPUs idle 95 %: used one
		{job: 5, user: "alice", gpus: 4}, // 2 of 4 idle: no advice
		{job: 6, user: "bob", gpus: 1},
		{job: 7, user: "bob", gpus: 1},
	}
	for i := range jobs {
		jobs[i].start, jobs[i].end, jobs[i].upTo, jobs[i].busy = start, end, t0, idleAll
	}
	seed(t, l.Loc(), jobs)
	ledgerdb.Tx(t, l.Loc(), func(exec func(q string, args ...any)) {
		for _, j := range []struct {
			id, gpus   int64
			used, idle float64
			memMax     int64
			idleGPUs   int64
			limit      any
		}{
			{1, 1, 720, 6480, 8000, 0, 9 * 3600},
			{2, 1, 720, 6480, 40000, 0, 9 * 3600},
			{3, 1, 3600, 3600, 8000, 0, 9 * 3600},
			{4, 4, 7200, 20520, 60000, 3, 2 * 3600},
			{5, 4, 14400, 14400, 60000, 2, nil},
			{6, 1, 3600, 0, 60000, 0, 9 * 3600},
			{7, 1, 3600, 0, 60000, 0, 9 * 3600},
		} {
			alloc := j.gpus * 7200
			exec(`UPDATE jobs SET alloc_gpu_s = ?, used_gpu_s = ?, idle_gpu_s = ? WHERE id = ?`, alloc, j.used, j.idle, j.id)
			exec(`INSERT INTO job_hours (job, node_id, hour, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, jobs) VALUES (?, ?, 0, 0, 0, 0, ?, 0)`, j.id, j.id, alloc)
			exec(`UPDATE gpus SET model = 'NVIDIA H200', mem_total_mib = 143771 WHERE node_id = ?`, j.id)
			for g := range j.gpus {
				idle := 0.0
				if g < j.idleGPUs {
					idle = 0.95 * 7200
				}
				exec(`UPDATE job_gpus SET sample_s = 7200, idle_s = ?, mem_max_mib = ? WHERE job = ? AND gpu_id = ?`, idle, j.memMax, j.id, j.id*100+g)
			}
			exec(`INSERT INTO job_resources (job, alloc_cpus, nodes, elapsed_s, time_limit_s) VALUES (?, 8, 1, 7200, ?)`, j.id, j.limit)
		}
	})
	cfg := testConfig(t, "", "x")
	cfg.Idle.Enabled, cfg.Digest.Enabled = false, true
	want := map[string][]Advice{
		"alice": {
			{Kind: AdviceMIG, Job: "1", Cluster: "c", GPUs: 1, PeakMiB: 8000, UtilPct: 10, Model: "NVIDIA H200", Slice: "1g.18gb"},
			{Kind: AdviceOneGPU, Job: "4", Cluster: "c", GPUs: 4, UtilPct: 25, IdleGPUs: 3, IdlePct: 95},
			{Kind: AdviceTimeLimit, Runs: 3, Of: 4, Ratio: 4, Elapsed: 2 * time.Hour, Limit: 9 * time.Hour},
		},
		"bob": nil,
	}
	for _, on := range []bool{true, false} {
		t.Run(map[bool]string{true: "on", false: "off"}[on], func(t *testing.T) {
			cfg.Digest.Advice.Enabled = on
			n := newNotifier(t, cfg, st)
			week, err := n.gatherWeek(context.Background(), now, "")
			if err != nil {
				t.Fatal(err)
			}
			for _, user := range []string{"alice", "bob"} {
				got := week.byUser[user].Advice
				w := want[user]
				if !on {
					w = nil
				}
				if d := cmp.Diff(w, got); d != "" {
					t.Errorf("%s's advice (-want +got):\n%s", user, d)
				}
			}
		})
	}
}

// TestGoldenDigestAdvice: a digest with each kind of advice, in each
// language.
func TestGoldenDigestAdvice(t *testing.T) {
	d := UserDigest{User: "alice", Week: "2026-W10", From: t0, To: t0.AddDate(0, 0, 7), WeekSums: WeekSums{Jobs: 5, AllocS: 45000, UsedS: 17100, IdleS: 16200, SampleS: 45000},
		Advice: []Advice{
			{Kind: AdviceMIG, Job: "4242", Cluster: "c", GPUs: 1, PeakMiB: 8000, UtilPct: 12.5, Model: "NVIDIA H200", Slice: "1g.18gb"},
			{Kind: AdviceOneGPU, Job: "4250_3", Cluster: "c", GPUs: 4, UtilPct: 24, IdleGPUs: 3, IdlePct: 96.5},
			{Kind: AdviceTimeLimit, Runs: 6, Of: 9, Ratio: 4, Elapsed: 35 * time.Minute, Limit: 8 * time.Hour},
		}}
	for _, lang := range config.NotifyLanguages {
		t.Run(lang, func(t *testing.T) {
			subject, body := renderDigest(d, lang)
			got := "Subject: " + subject + "\n\n" + body
			checkGolden(t, "digest-advice."+lang+".golden", got)
		})
	}
}

// BenchmarkDigestWeek: the week's digests of 1,000 ended one-GPU runs of
// 50 users, each a candidate for advice (its GPUs read), with the leads'
// and the admins' digests: the weekly pass, in CPU per pass.
func BenchmarkDigestWeek(b *testing.B) {
	st, l := ledger(b)
	now := t0.AddDate(0, 0, 7).Add(10 * time.Hour)
	var jobs []fjob
	for i := range 1000 {
		start := t0.Add(time.Duration(i) * time.Minute)
		jobs = append(jobs, fjob{job: int64(i + 1), user: fmt.Sprintf("u%d", i%50), gpus: 1, start: start, end: start.Add(2 * time.Hour), upTo: start, busy: idleAll})
	}
	seed(b, l.Loc(), jobs)
	ledgerdb.Tx(b, l.Loc(), func(exec func(q string, args ...any)) {
		exec(`UPDATE jobs SET alloc_gpu_s = 7200, used_gpu_s = 720, idle_gpu_s = 6480`)
		exec(`UPDATE gpus SET model = 'NVIDIA H200', mem_total_mib = 143771`)
		exec(`UPDATE job_gpus SET sample_s = 7200, idle_s = 6480, mem_max_mib = 8000`)
		for i := range 1000 {
			exec(`INSERT INTO job_hours (job, node_id, hour, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, jobs) VALUES (?, ?, 0, 0, 0, 0, 7200, 0)`, i+1, i+1)
			exec(`INSERT INTO job_resources (job, alloc_cpus, nodes, elapsed_s, time_limit_s) VALUES (?, 8, 1, 7200, 86400)`, i+1)
		}
	})
	cfg := testConfig(b, "", "bench")
	cfg.Digest.Enabled, cfg.Digest.Admins, cfg.Digest.Leads = true, []string{"ops@example.org"}, map[string][]string{"proj": {"dave"}}
	n := newNotifier(b, cfg, st)
	ctx := context.Background()
	var before, after syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &before); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		msgs, err := n.Preview(ctx, RuleDigest, now, "")
		if err != nil || len(msgs) != 52 {
			b.Fatalf("%d messages, %v; want 50 users', a lead's and an admin's", len(msgs), err)
		}
	}
	b.StopTimer()
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &after); err != nil {
		b.Fatal(err)
	}
	cpu := after.Utime.Nano() + after.Stime.Nano() - before.Utime.Nano() - before.Stime.Nano()
	b.ReportMetric(float64(cpu)/1e6/float64(b.N), "cpu-ms/op")
}
