package store

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// modelKey is a rollup_model_hour key as the tests compare it.
type modelKey struct {
	Hour                      int64
	Cluster, Partition, Model string
	Ignored                   int64
}

// approx holds integers exact and reals within 1e-6 (relative past 1).
var approx = cmp.Comparer(func(a, b float64) bool {
	return math.Abs(a-b) <= 1e-6*max(1, math.Abs(a), math.Abs(b))
})

// modelRows reads q's rows (modelKey's columns, then Usage's) into a map,
// leaving out the rows whose figures are all (about) zero: a moved job
// leaves its old keys at zero in either table, not always in both.
func modelRows(t *testing.T, s *Ledger, q string) map[modelKey]Usage {
	t.Helper()
	rows, err := s.db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[modelKey]Usage{}
	for rows.Next() {
		var k modelKey
		var u Usage
		if err := rows.Scan(&k.Hour, &k.Cluster, &k.Partition, &k.Model, &k.Ignored,
			&u.AllocS, &u.UsedS, &u.IdleS, &u.SampleS, &u.EnergyMJ, &u.Jobs, &u.Billing); err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(u, Usage{}, approx) {
			out[k] = u
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkModelRollup holds rollup_model_hour to rollup_node_hour summed by
// (hour, cluster, partition, model, ignored), every figure.
func checkModelRollup(t *testing.T, s *Ledger, when string) {
	t.Helper()
	got := modelRows(t, s, `SELECT hour, cluster, partition, model, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing FROM rollup_model_hour`)
	want := modelRows(t, s, `SELECT hour, cluster, partition, model, ignored, sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)
 FROM rollup_node_hour GROUP BY hour, cluster, partition, model, ignored`)
	if len(want) == 0 {
		t.Fatalf("%s: no node hours: the test compares nothing", when)
	}
	if d := cmp.Diff(want, got, approx); d != "" {
		t.Errorf("%s: rollup_model_hour is not rollup_node_hour summed (-want +got):\n%s", when, d)
	}
}

// modelHistory writes a writer's history over invScenario's jobs, with
// two models, two partitions and billing weights by partition: a third
// of the jobs start without their account and partition, which their end
// brings (moveJob after their samples); one job ignored, then counted
// again an hour later; the open jobs extended.
func modelHistory(t *testing.T, seed uint64) (*Ledger, time.Time) {
	t.Helper()
	s := openTemp(t)
	return s, writeModelHistory(t, s, seed, func(when string) { checkModelRollup(t, s, when) })
}

// writeModelHistory writes modelHistory's history into s, calling check
// after each step, and returns the history's clock.
func writeModelHistory(t *testing.T, s *Ledger, seed uint64, check func(when string)) time.Time {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 25))
	jobs, nowMS := invScenario(r)
	now := time.UnixMilli(nowMS).UTC()
	event := func(j *invJob, kind record.Kind, at int64) *record.Event {
		e := j.event(kind, at)
		e.Job.Partition = fmt.Sprint("p", j.id%2)
		if kind == record.JobStart && j.id%3 == 0 {
			e.Job.Account, e.Job.Partition = "", ""
		}
		for i := range e.GPUs {
			e.GPUs[i].Model = []string{"H100", "A100"}[j.node%2]
		}
		return e
	}
	batchOf(t, s, now, func(b *Batch) error {
		// Billed by partition, so that billing too is summed and moved.
		w := []BillingWeights{{Partition: "p0", Weights: "GRES/gpu=2.0"}, {Partition: "p1", Weights: "GRES/gpu=3.0"}}
		if err := b.SetBillingWeights("c", BillingSlurm, now.Add(-48*time.Hour).Unix(), w); err != nil {
			return err
		}
		for _, j := range jobs {
			if err := b.Event(event(j, record.JobStart, j.start)); err != nil {
				return err
			}
		}
		return nil
	})
	batchOf(t, s, now, func(b *Batch) error {
		for i, j := range jobs {
			if len(j.samples) > 0 {
				if _, err := b.Segment(j.segment(uint64(i + 1))); err != nil {
					return err
				}
			}
		}
		return nil
	})
	check("after the samples")
	batchOf(t, s, now, func(b *Batch) error {
		for _, j := range jobs {
			if j.end > 0 {
				if err := b.Event(event(j, record.JobEnd, j.end)); err != nil {
					return err
				}
			}
		}
		return b.ExtendOpen()
	})
	check("after the ends")
	var job int64
	if err := s.db.QueryRow(`SELECT min(id) FROM jobs WHERE alloc_gpu_s > 0`).Scan(&job); err != nil {
		t.Fatal(err)
	}
	batchOf(t, s, now, func(b *Batch) error { return b.SetIgnored(job, true, "test") })
	check("after ignoring a job")
	batchOf(t, s, now.Add(time.Hour), func(b *Batch) error {
		if err := b.SetIgnored(job, false, ""); err != nil {
			return err
		}
		return b.ExtendOpen()
	})
	check("after counting it again an hour later")
	return now
}

// TestModelRollupFollowsWriter: the writer keeps rollup_model_hour as
// rollup_node_hour summed through samples, ends that move a job's
// rollups, ignoring and extending; migration 0025 makes the same rows
// from a ledger at schema 24.
func TestModelRollupFollowsWriter(t *testing.T) {
	moved := 0
	for seed := uint64(1); seed <= 4; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			s, _ := modelHistory(t, seed)
			var n int
			if err := s.db.QueryRow(`SELECT count(*) FROM jobs WHERE id % 3 = 0 AND partition != '' AND alloc_gpu_s > 0`).Scan(&n); err != nil {
				t.Fatal(err)
			}
			moved += n
			m := mustMigrations(s.Engine)[ModelRollupsSchema-1]
			if _, err := s.db.Exec(`DROP TABLE rollup_model_hour`); err != nil {
				t.Fatal(err)
			}
			if _, err := s.db.Exec(m.sql); err != nil {
				t.Fatalf("%s: %v", m.name, err)
			}
			checkModelRollup(t, s, "after "+m.name)
		})
	}
	if moved == 0 {
		t.Error("no job's end moved its rollups: the test misses moveJob")
	}
}

// TestModelFacts: ModelFacts over random windows and filters, hour by
// hour and summed, gives rollup_node_hour's rows (NodeFacts) summed over
// the nodes; it refuses what it cannot answer.
func TestModelFacts(t *testing.T) {
	ctx := context.Background()
	s, now := modelHistory(t, 7)
	type key struct {
		Start                     int64
		Cluster, Partition, Model string
	}
	read := func(f func(context.Context, FactQuery, func(*FactRow)) error, q FactQuery) map[key]Usage {
		t.Helper()
		out := map[key]Usage{}
		if err := f(ctx, q, func(x *FactRow) {
			if q.Sum && x.Start != q.From {
				t.Errorf("%+v: a summed row starts at %d", q, x.Start)
			}
			k := key{x.Start, x.Cluster, x.Partition, x.Model}
			u := out[k]
			u.Add(x.Usage)
			out[k] = u
		}); err != nil {
			t.Fatalf("%+v: %v", q, err)
		}
		for k, u := range out {
			if cmp.Equal(u, Usage{}, approx) {
				delete(out, k)
			}
		}
		return out
	}
	pick := func(r *rand.Rand, from []string) []string {
		var out []string
		for _, v := range from {
			if r.IntN(2) == 0 {
				out = append(out, v)
			}
		}
		return out
	}
	r := rand.New(rand.NewPCG(7, 35))
	last := now.Unix()/3600 + 2
	first := last - 40
	seen := 0
	for i := 0; i < 60; i++ {
		from := first + r.Int64N(last-first)
		q := FactQuery{Grain: Hourly, From: from * 3600, To: (from + 1 + r.Int64N(last-from)) * 3600, Sum: i%2 == 1}
		if i%3 != 0 {
			q.Clusters, q.Partitions, q.Models = pick(r, []string{"c", "x"}), pick(r, []string{"p0", "p1", "", "q"}), pick(r, []string{"H100", "A100", "B200"})
		}
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			want := read(s.NodeFacts, q)
			if d := cmp.Diff(want, read(s.ModelFacts, q), approx); d != "" {
				t.Errorf("%+v (-node rollups summed +model rollup):\n%s", q, d)
			}
			seen += len(want)
		})
	}
	if seen == 0 {
		t.Fatal("no window held a row: the test compares nothing")
	}
	for _, q := range []FactQuery{
		{Grain: Daily, To: 86400},
		{Grain: Monthly, To: 86400},
		{Grain: Hourly, To: 3600, Users: []string{"u1"}},
		{Grain: Hourly, To: 3600, Accounts: []string{"a1"}},
		{Grain: Hourly, To: 3600, NodeIDs: []int64{1}},
	} {
		if err := s.ModelFacts(ctx, q, func(*FactRow) {}); err == nil {
			t.Errorf("%+v: no error", q)
		}
	}
}
