package store

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// invJob is one random job run of the invariant tests: on one node, some
// of its GPUs, sampled at its own phase and interval.
type invJob struct {
	id         uint64
	node       int
	gpus       []int // indices on the node
	start, end int64 // ms; end 0 = still running at the pass
	ivMS       int64
	phase      int64
	samples    []invSample
}

type invSample struct {
	gpu  int
	t    int64 // ms
	util uint32
	idle bool
}

// invUUID names GPU g of node n.
func invUUID(n, g int) string { return fmt.Sprintf("GPU-00000000-0000-0000-%04d-%012d", n, g) }

func invNode(n int) string { return fmt.Sprintf("n%d", n) }

// invScenario is random jobs that never share a GPU at once, their
// samples taken at random phases (never on the hour, as a real agent's),
// and the pass time.
func invScenario(r *rand.Rand) ([]*invJob, int64) {
	base := time.Date(2026, 3, 28, 22, 0, 0, 0, time.UTC).UnixMilli() // a month and a day boundary
	now := base + 30*msPerHour
	var jobs []*invJob
	nodes := 1 + r.IntN(3)
	id := uint64(100)
	for n := 0; n < nodes; n++ {
		const gpus = 4
		// One agent per node samples all its GPUs at one cadence.
		ivMS := 1000 * (2 + r.Int64N(60))
		phase := r.Int64N(ivMS)
		free := make([]int64, gpus) // when each GPU is free again
		for i := range free {
			free[i] = base + r.Int64N(2*msPerHour)
		}
		for k := 0; k < 6; k++ {
			j := &invJob{id: id, node: n, ivMS: ivMS}
			id++
			want := 1 + r.IntN(gpus)
			// the GPUs free first
			order := make([]int, gpus)
			for i := range order {
				order[i] = i
			}
			sort.Slice(order, func(a, b int) bool { return free[order[a]] < free[order[b]] })
			j.gpus = append(j.gpus, order[:want]...)
			sort.Ints(j.gpus)
			for _, g := range j.gpus {
				j.start = max(j.start, free[g])
			}
			j.start += r.Int64N(20 * 60_000)
			j.start = j.start / 1000 * 1000 // events are whole seconds
			if j.start >= now-60_000 {
				break
			}
			dur := 1000 * (1 + r.Int64N(5*3600)) // events are whole seconds
			if r.IntN(5) == 0 {
				dur = 1000 * (1 + r.Int64N(5*60)) // short: within an hour or across one
			}
			if j.start+dur < now && r.IntN(6) != 0 {
				j.end = j.start + dur
			}
			for _, g := range j.gpus {
				if j.end > 0 {
					free[g] = j.end
				} else {
					free[g] = math.MaxInt64 / 2
				}
			}
			// The agent's first tick after the start.
			j.phase = (phase - j.start%ivMS + ivMS) % ivMS
			last := now - r.Int64N(j.ivMS) // an agent's newest sample before the pass
			if j.end > 0 {
				last = j.end
			}
			for _, g := range j.gpus {
				for t := j.start + j.phase; t < last; t += j.ivMS {
					j.samples = append(j.samples, invSample{gpu: g, t: t, util: uint32(r.IntN(101)), idle: r.IntN(3) == 0})
				}
			}
			jobs = append(jobs, j)
		}
	}
	return jobs, now
}

func (j *invJob) event(kind record.Kind, at int64) *record.Event {
	e := &record.Event{Schema: record.EventSchema, Kind: kind, Time: time.UnixMilli(at).UTC(), Cluster: "c", Node: invNode(j.node)}
	e.Job.ID, e.Job.User, e.Job.Account, e.Job.Partition = j.id, "u"+fmt.Sprint(j.id%3), "a"+fmt.Sprint(j.id%2), "gpu"
	for _, g := range j.gpus {
		idx := g
		e.Job.GPUs = append(e.Job.GPUs, g)
		e.GPUs = append(e.GPUs, record.GPU{Minor: g, Index: &idx, UUID: invUUID(j.node, g), Model: "H100"})
	}
	e.Key = record.EventKey("c", j.id, 0, e.Node, kind)
	return e
}

// segment is the job's samples as one segment per GPU run, in time order.
func (j *invJob) segment(seq uint64) (*record.SegmentHeader, []record.Sample) {
	h := &record.SegmentHeader{Cluster: "c", Node: invNode(j.node), Seq: seq, Interval: float64(j.ivMS) / 1000}
	var ss []record.Sample
	for _, s := range j.samples {
		u := s.util
		ss = append(ss, record.Sample{Time: time.UnixMilli(s.t).UTC(), UUID: invUUID(j.node, s.gpu), Index: s.gpu, GPUUtil: &u,
			Jobs: []record.JobShare{{Job: j.id, Share: 1, Idle: s.idle}}})
	}
	sort.SliceStable(ss, func(a, b int) bool { return ss[a].Time.Before(ss[b].Time) })
	return h, ss
}

// want is what the ledger should hold for the job per hour: allocated
// GPU-seconds to its end (or, running, to the pass or the end of its
// newest sample, whichever is later), and each sample's window, cut
// where the GPU's next sample starts and to the allocation, in the
// hours it covers.
func (j *invJob) want(now int64) map[int64]*Usage {
	out := map[int64]*Usage{}
	at := func(h int64) *Usage {
		if out[h] == nil {
			out[h] = &Usage{}
		}
		return out[h]
	}
	end := j.end
	if end == 0 {
		end = (now + 999) / 1000 * 1000
		for _, s := range j.samples {
			end = max(end, (s.t+j.ivMS+999)/1000*1000)
		}
	}
	for h := j.start / msPerHour; h*msPerHour < end; h++ {
		lo, hi := max(j.start, h*msPerHour), min(end, (h+1)*msPerHour)
		at(h).AllocS += int64(len(j.gpus)) * (hi - lo) / 1000
	}
	at(j.start/msPerHour).Jobs++
	hiAlloc := int64(math.MaxInt64)
	if j.end > 0 {
		hiAlloc = j.end
	}
	for _, s := range j.samples {
		w := window{max(s.t, j.start), min(s.t+j.ivMS, hiAlloc)}
		if w.hi <= w.lo {
			continue // outside Slurm's allocation
		}
		for h := w.lo / msPerHour; h*msPerHour < w.hi; h++ {
			ms := min(w.hi, (h+1)*msPerHour) - max(w.lo, h*msPerHour)
			d := at(h)
			d.SampleS += float64(ms) / 1000
			d.UsedS += float64(s.util) * float64(ms) / 1000 / 100
			if s.idle {
				d.IdleS += float64(ms) / 1000
			}
		}
	}
	return out
}

// TestInvariantsProperty ingests random jobs through the real batch, in
// random orders (the epilog before or after the samples of the job's
// last hours), and holds the ledger to its invariants after every
// pass: per job, node and hour, used, idle and sampled time never pass
// allocated; the job hours are what the jobs did, cut at the hours; the
// hourly, daily and monthly rollups and the jobs' totals are the job
// hours summed.
func TestInvariantsProperty(t *testing.T) {
	seeds := 40
	if testing.Short() {
		seeds = 5
	}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 14))
			jobs, nowMS := invScenario(r)
			now := time.UnixMilli(nowMS).UTC()
			s := openTemp(t)
			// Pass 1: every start. Pass 2: the samples, and the ends of
			// the jobs whose epilog came first. Pass 3: the other ends.
			late := map[uint64]bool{}
			for _, j := range jobs {
				late[j.id] = r.IntN(2) == 0
			}
			batchOf(t, s, now, func(b *Batch) error {
				for _, j := range jobs {
					if err := b.Event(j.event(record.JobStart, j.start)); err != nil {
						return err
					}
				}
				return nil
			})
			batchOf(t, s, now, func(b *Batch) error {
				for _, j := range jobs {
					if j.end > 0 && !late[j.id] {
						if err := b.Event(j.event(record.JobEnd, j.end)); err != nil {
							return err
						}
					}
				}
				for i, j := range jobs {
					if len(j.samples) == 0 {
						continue
					}
					if _, err := b.Segment(j.segment(uint64(i + 1))); err != nil {
						return err
					}
				}
				return nil
			})
			checkInvariants(t, s, "after the samples")
			batchOf(t, s, now, func(b *Batch) error {
				for _, j := range jobs {
					if j.end > 0 && late[j.id] {
						if err := b.Event(j.event(record.JobEnd, j.end)); err != nil {
							return err
						}
					}
				}
				return b.ExtendOpen()
			})
			checkInvariants(t, s, "after the ends")
			for _, j := range jobs {
				checkJobHours(t, s, j, nowMS)
			}
			// Pass 4: Slurm's times, a few seconds inside the hooks', as
			// reconciliation takes them; in some ledgers after the
			// samples of the first hours were pruned.
			pruned := r.IntN(2) == 0
			if pruned {
				cut := time.UnixMilli(nowMS - int64(4+r.IntN(24))*msPerHour - r.Int64N(msPerHour))
				batchOf(t, s, now, func(b *Batch) error {
					_, err := b.PruneSamples(cut)
					return err
				})
			}
			reconcileInside(t, s, r, jobs, now)
			checkInvariants(t, s, fmt.Sprintf("after reconciling (samples pruned: %t)", pruned))
			if !pruned {
				for _, j := range jobs {
					checkJobHours(t, s, j, nowMS)
				}
			}
		})
	}
}

// reconcileInside reconciles every finished job with Slurm's times, its
// start and end each up to 5 s inside the hooks' (never past each other),
// and moves the jobs' own times there.
func reconcileInside(t *testing.T, s *Ledger, r *rand.Rand, jobs []*invJob, now time.Time) {
	t.Helper()
	byID := map[uint64]*invJob{}
	for _, j := range jobs {
		byID[j.id] = j
	}
	batchOf(t, s, now, func(b *Batch) error {
		us, err := b.Unreconciled(0, 1000)
		if err != nil {
			return err
		}
		for _, u := range us {
			j := byID[u.JobID]
			if j == nil || j.end == 0 {
				return fmt.Errorf("job %d is not a finished job of the scenario", u.JobID)
			}
			in := min(5000, (j.end-j.start)/2000*1000)
			j.start += r.Int64N(in/1000+1) * 1000
			j.end -= r.Int64N(in/1000+1) * 1000
			if err := b.Reconcile(u.Row, SlurmTimes{Start: time.UnixMilli(j.start), End: time.UnixMilli(j.end), State: "completed"}); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkJobHours holds the job's hours to what it did.
func checkJobHours(t *testing.T, s *Ledger, j *invJob, now int64) {
	t.Helper()
	got := map[int64]Usage{}
	rows, err := s.db.Query(`SELECT h.hour, h.alloc_gpu_s, h.used_gpu_s, h.idle_gpu_s, h.sample_s, h.jobs FROM job_hours h JOIN jobs j ON j.id = h.job WHERE j.job_id = ?`, int64(j.id))
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var h int64
		var d Usage
		if err := rows.Scan(&h, &d.AllocS, &d.UsedS, &d.IdleS, &d.SampleS, &d.Jobs); err != nil {
			t.Fatal(err)
		}
		got[h] = d
	}
	for h, w := range j.want(now) {
		g := got[h]
		if g.AllocS != w.AllocS || g.Jobs != w.Jobs || !near(g.UsedS, w.UsedS) || !near(g.IdleS, w.IdleS) || !near(g.SampleS, w.SampleS) {
			t.Errorf("job %d (%d GPUs, %s–%s, interval %d ms, phase %d) hour %s: got %+v, want %+v", j.id, len(j.gpus),
				time.UnixMilli(j.start).UTC().Format(time.TimeOnly), time.UnixMilli(j.end).UTC().Format(time.TimeOnly), j.ivMS, j.phase,
				time.Unix(h*3600, 0).UTC().Format("01-02 15h"), g, *w)
		}
		delete(got, h)
	}
	for h, g := range got {
		if g != (Usage{}) && !(g.AllocS == 0 && near(g.UsedS, 0) && near(g.IdleS, 0) && near(g.SampleS, 0) && g.Jobs == 0) {
			t.Errorf("job %d hour %s: got %+v, want nothing", j.id, time.Unix(h*3600, 0).UTC().Format("01-02 15h"), g)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-6*max(1, math.Abs(b)) }

// checkInvariants holds every job hour to its allocation and the rollups
// and job totals to the job hours.
func checkInvariants(t *testing.T, s *Ledger, when string) {
	t.Helper()
	const eps = 1e-6
	for _, q := range []struct{ what, sql string }{
		{"job hours whose used, idle or sampled time passes allocated", `SELECT job, node_id, hour, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s FROM job_hours
 WHERE used_gpu_s > alloc_gpu_s + 1e-6 OR idle_gpu_s > alloc_gpu_s + 1e-6 OR sample_s > alloc_gpu_s + 1e-6 OR used_gpu_s < -1e-6 OR idle_gpu_s < -1e-6 OR sample_s < -1e-6`},
		{"jobs whose used or idle time passes allocated", `SELECT id, alloc_gpu_s, used_gpu_s, idle_gpu_s FROM jobs WHERE used_gpu_s > alloc_gpu_s + 1e-6 OR idle_gpu_s > alloc_gpu_s + 1e-6`},
		{"jobs whose totals are not their hours'", `SELECT j.id, j.alloc_gpu_s, h.a, j.used_gpu_s, h.u, j.idle_gpu_s, h.i FROM jobs j
 JOIN (SELECT job, sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u, sum(idle_gpu_s) AS i FROM job_hours GROUP BY job) h ON h.job = j.id
 WHERE j.alloc_gpu_s != h.a OR abs(j.used_gpu_s - h.u) > 1e-6 OR abs(j.idle_gpu_s - h.i) > 1e-6`},
		{"hours whose rollup is not their job hours'", `SELECT r.hour, r.a, h.a, r.u, h.u, r.i, h.i, r.j, h.j FROM
 (SELECT hour, node_id, sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u, sum(idle_gpu_s) AS i, sum(jobs) AS j FROM rollup_hourly GROUP BY hour, node_id) r
 JOIN (SELECT hour, node_id, sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u, sum(idle_gpu_s) AS i, sum(jobs) AS j FROM job_hours GROUP BY hour, node_id) h
 ON h.hour = r.hour AND h.node_id = r.node_id WHERE r.a != h.a OR abs(r.u - h.u) > 1e-6 OR abs(r.i - h.i) > 1e-6 OR r.j != h.j`},
		{"days whose rollup is not their job hours'", `SELECT r.day, r.a, h.a, r.u, h.u FROM
 (SELECT day, sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u, sum(idle_gpu_s) AS i FROM rollup_daily GROUP BY day) r
 JOIN (SELECT hour / 24 AS day, sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u, sum(idle_gpu_s) AS i FROM job_hours GROUP BY hour / 24) h
 ON h.day = r.day WHERE r.a != h.a OR abs(r.u - h.u) > 1e-6 OR abs(r.i - h.i) > 1e-6`},
		{"hours whose node-less rollup is not the hourly one's nodes", `SELECT hour, cluster, s.alloc_gpu_s, h.a, s.used_gpu_s, h.u, s.jobs, h.j FROM rollup_hourly_sum s
 FULL JOIN (SELECT hour, cluster, user, account, partition, model, ignored, sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u, sum(jobs) AS j FROM rollup_hourly
 GROUP BY hour, cluster, user, account, partition, model, ignored) h USING (hour, cluster, user, account, partition, model, ignored)
 WHERE h.a IS NULL OR s.alloc_gpu_s IS NULL OR s.alloc_gpu_s != h.a OR abs(s.used_gpu_s - h.u) > 1e-6 OR s.jobs != h.j`},
		{"node hours that are not the hourly rollup's", `SELECT hour, node_id, n.alloc_gpu_s, h.a, n.used_gpu_s, h.u, n.jobs, h.j FROM rollup_node_hour n
 FULL JOIN (SELECT hour, cluster, partition, node_id, model, ignored, sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u, sum(jobs) AS j FROM rollup_hourly
 GROUP BY hour, cluster, partition, node_id, model, ignored) h USING (hour, cluster, partition, node_id, model, ignored)
 WHERE coalesce(n.alloc_gpu_s, 0) != coalesce(h.a, 0) OR abs(coalesce(n.used_gpu_s, 0) - coalesce(h.u, 0)) > 1e-6 OR coalesce(n.jobs, 0) != coalesce(h.j, 0)`},
		{"node days that are not the hourly rollup's", `SELECT day, node_id, n.alloc_gpu_s, h.a, n.used_gpu_s, h.u, n.jobs, h.j FROM rollup_node_day n
 FULL JOIN (SELECT hour / 24 AS day, cluster, partition, node_id, model, ignored, sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u, sum(jobs) AS j FROM rollup_hourly
 GROUP BY hour / 24, cluster, partition, node_id, model, ignored) h USING (day, cluster, partition, node_id, model, ignored)
 WHERE coalesce(n.alloc_gpu_s, 0) != coalesce(h.a, 0) OR abs(coalesce(n.used_gpu_s, 0) - coalesce(h.u, 0)) > 1e-6 OR coalesce(n.jobs, 0) != coalesce(h.j, 0)`},
		{"node months that are not the hourly rollup's nodes", `SELECT node_id, ignored, n.a, h.a, n.u, h.u FROM
 (SELECT node_id, ignored, sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u FROM rollup_node_month GROUP BY node_id, ignored) n
 FULL JOIN (SELECT node_id, ignored, sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u FROM rollup_hourly GROUP BY node_id, ignored) h USING (node_id, ignored)
 WHERE coalesce(n.a, 0) != coalesce(h.a, 0) OR abs(coalesce(n.u, 0) - coalesce(h.u, 0)) > 1e-6`},
		{"the monthly rollup is not the daily one", `SELECT m.a, d.a FROM (SELECT sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u FROM rollup_monthly) m,
 (SELECT sum(alloc_gpu_s) AS a, sum(used_gpu_s) AS u FROM rollup_daily) d WHERE m.a != d.a OR abs(m.u - d.u) > 1e-6`},
	} {
		_ = eps
		if bad := dump(t, s.db, q.sql); len(bad) > 0 {
			t.Errorf("%s: %s:\n%v", when, q.what, bad)
		}
	}
	checkModelRollup(t, s, when)
}
