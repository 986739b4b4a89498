package report

import (
	"context"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// pjob is one random job run of the report invariant test: on one node,
// some of its GPUs, sampled by the node's agent at its own cadence.
type pjob struct {
	id         uint64
	node       int
	gpus       []int
	user, acct string
	part       string
	start, end int64 // Unix seconds; end is the pass time for a running job
	running    bool
	ivMS       int64
	samples    []psample
}

type psample struct {
	gpu  int
	t    int64 // ms
	util uint32
	idle bool
}

const (
	pNodes   = 3
	pGPUs    = 4
	pHorizon = 44 * 86400
)

func puuid(n, g int) string { return fmt.Sprintf("GPU-00000000-0000-0000-%04d-%012d", n, g) }

// pScenario makes random jobs that never share a GPU at once over
// pHorizon from a random start in late February 2026, so that the
// window holds all of March (read from the monthly rollup), the
// month boundary into April and the clock changes of Newfoundland
// (8 March), Europe (29 March) and South Australia (5 April). Samples are taken at random phases,
// never on the hour, as a real agent's; a running job's newest sample
// ends before the pass, so that its allocation ends at the pass.
func pScenario(r *rand.Rand) (jobs []*pjob, base, now int64) {
	base = time.Date(2026, 2, 24, 0, 0, 0, 0, time.UTC).Unix() + r.Int64N(3*86400)
	now = base + pHorizon
	users := []string{"alice", "bob", "carol", "dave", "erin"}
	accts := []string{"vision", "nlp", "robotics"}
	id := uint64(1000)
	for n := 0; n < pNodes; n++ {
		ivMS := 1000 * (60 + r.Int64N(540))
		phase := r.Int64N(ivMS)
		free := make([]int64, pGPUs)
		for i := range free {
			free[i] = base + r.Int64N(6*3600)
		}
		for {
			want := 1 + r.IntN(pGPUs)
			order := []int{0, 1, 2, 3}
			sort.Slice(order, func(a, b int) bool { return free[order[a]] < free[order[b]] })
			j := &pjob{id: id, node: n, gpus: append([]int(nil), order[:want]...), ivMS: ivMS,
				user: users[r.IntN(len(users))], acct: accts[r.IntN(len(accts))], part: []string{"gpu", "long"}[r.IntN(2)]}
			id++
			sort.Ints(j.gpus)
			for _, g := range j.gpus {
				j.start = max(j.start, free[g])
			}
			j.start += r.Int64N(3 * 3600)
			if j.start >= now-3600 {
				break
			}
			dur := 1 + r.Int64N(3*86400)
			if r.IntN(4) == 0 {
				dur = 1 + r.Int64N(2*3600) // short: within an hour or across one
			}
			j.end = j.start + dur
			if j.end >= now {
				j.end, j.running = now, true
			}
			for _, g := range j.gpus {
				free[g] = j.end
			}
			// The agent's ticks inside the allocation; a running job's
			// stop one interval before the pass.
			last := j.end * 1000
			if j.running {
				last -= ivMS
			}
			first := j.start*1000 + (phase-j.start*1000%ivMS+ivMS)%ivMS
			// 0: idle throughout, 1: mixed, 2: busy, 3: flat out (its
			// rows' used nears their allocation, so that the bound bites).
			busy := r.IntN(4)
			for _, g := range j.gpus {
				for t := first; t < last; t += ivMS {
					idle := busy == 0 || busy == 1 && r.IntN(3) == 0
					util := uint32(0)
					switch {
					case busy == 3:
						util = 100
					case !idle:
						util = uint32(1 + r.IntN(100))
					}
					j.samples = append(j.samples, psample{gpu: g, t: t, util: util, idle: idle})
				}
			}
			jobs = append(jobs, j)
		}
	}
	return jobs, base, now
}

func (j *pjob) event(kind record.Kind, at int64) *record.Event {
	node := fmt.Sprintf("n%d", j.node)
	e := &record.Event{Schema: record.EventSchema, Kind: kind, Time: time.Unix(at, 0).UTC(), Cluster: "c1", Node: node,
		Key: record.EventKey("c1", j.id, 0, node, kind)}
	e.Job = record.Job{ID: j.id, User: j.user, Account: j.acct, Partition: j.part, Node: node, Cluster: "c1"}
	for _, g := range j.gpus {
		idx := g
		e.Job.GPUs = append(e.Job.GPUs, g)
		e.GPUs = append(e.GPUs, record.GPU{Minor: g, Index: &idx, UUID: puuid(j.node, g), Model: []string{"H100", "A100", "L40S"}[j.node]})
	}
	if kind == record.JobEnd {
		e.Job.Exit = &record.Exit{}
	}
	return e
}

func (j *pjob) segment(seq uint64) (*record.SegmentHeader, []record.Sample) {
	h := &record.SegmentHeader{Cluster: "c1", Node: fmt.Sprintf("n%d", j.node), Seq: seq, Interval: float64(j.ivMS) / 1000}
	var ss []record.Sample
	for _, s := range j.samples {
		u := s.util
		ss = append(ss, record.Sample{Time: time.UnixMilli(s.t).UTC(), UUID: puuid(j.node, s.gpu), Index: s.gpu, GPUUtil: &u,
			Jobs: []record.JobShare{{Job: j.id, Share: 1, Idle: s.idle}}})
	}
	sort.SliceStable(ss, func(a, b int) bool { return ss[a].Time.Before(ss[b].Time) })
	return h, ss
}

// used and idle are the job's GPU-seconds from its samples: each sample
// covers its interval, cut at the allocation's end.
func (j *pjob) usedIdle() (used, idle float64) {
	for _, s := range j.samples {
		w := float64(min(s.t+j.ivMS, j.end*1000)-s.t) / 1000
		used += float64(s.util) / 100 * w
		if s.idle {
			idle += w
		}
	}
	return used, idle
}

// buildSampledLedger writes the jobs' starts, samples and ends through
// store.Batch, as ingest does: the starts in one pass, the samples and
// the ends in the next.
func buildSampledLedger(t *testing.T, jobs []*pjob, now int64) string {
	t.Helper()
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	pass := func(fn func(b *store.Batch) error) {
		b, err := st.Begin(context.Background(), time.Unix(now, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(b); err != nil {
			b.Rollback()
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	pass(func(b *store.Batch) error {
		for _, j := range jobs {
			if err := b.Event(j.event(record.JobStart, j.start)); err != nil {
				return err
			}
		}
		return nil
	})
	pass(func(b *store.Batch) error {
		for i, j := range jobs {
			if len(j.samples) > 0 {
				if _, err := b.Segment(j.segment(uint64(i + 1))); err != nil {
					return err
				}
			}
			if !j.running {
				if err := b.Event(j.event(record.JobEnd, j.end)); err != nil {
					return err
				}
			}
		}
		return b.ExtendOpen()
	})
	return l.Loc()
}

// pZones are UTC and zones whose offset is not whole hours (Kolkata
// +5:30, Adelaide +10:30/+9:30, St John's −3:30/−2:30), and zones whose
// clocks change inside the jobs' time (St John's 8 March, Berlin 29
// March, Adelaide 5 April).
var pZones = []string{"UTC", "Asia/Kolkata", "Australia/Adelaide", "America/St_Johns", "Europe/Berlin"}

// usageRow is a report row's usage cells, read by column key.
type usageRow struct {
	period        string
	alloc         int64
	used, idle    float64
	footer, child bool
	name          string
}

func readUsageRows(t *testing.T, tb *table.Table) []usageRow {
	t.Helper()
	col := map[string]int{}
	for i, c := range tb.Columns {
		col[c.Key] = i
	}
	for _, k := range []string{"alloc_gpu", "used_gpu", "idle_gpu"} {
		if _, ok := col[k]; !ok {
			t.Fatalf("no %s column in %q", k, tb.Title)
		}
	}
	var out []usageRow
	for _, r := range tb.Rows {
		u := usageRow{period: "total", alloc: r.Cells[col["alloc_gpu"]].(int64), footer: r.Footer, child: r.Child}
		if i, ok := col["period"]; ok {
			u.period = r.Cells[i].(string)
		}
		u.name = fmt.Sprint(r.Cells[firstName(tb)])
		if v, ok := r.Cells[col["used_gpu"]].(float64); ok {
			u.used = v
		}
		if v, ok := r.Cells[col["idle_gpu"]].(float64); ok {
			u.idle = v
		}
		out = append(out, u)
	}
	return out
}

// firstName is the index of the row's name column: after the period.
func firstName(tb *table.Table) int {
	if len(tb.Columns) > 0 && tb.Columns[0].Key == "period" {
		return 1
	}
	return 0
}

// within is a ≤ b but for float sums' rounding.
func within(a, b float64) bool { return a <= b+1e-6*max(1, math.Abs(b)) }

func nearly(a, b float64) bool { return math.Abs(a-b) <= 1e-6*max(1, math.Abs(b)) }

// exact holds what the reports cannot yet hold (issue 14): the periods
// of a zone whose midnight is not a whole UTC hour to the jobs clipped
// to them to the second, and a job's per-GPU idle and sampled time to
// its allocation. Without it, those periods are held to the hours each
// starts in, and a GPU's sampled time may pass its allocation by less
// than one sampling interval.
var exact = flag.Bool("exact", false, "hold half-hour zones' periods and the job detail's GPUs to their exact bounds (issue 14)")

// TestReportInvariantsProperty: random jobs with samples, written
// through the store's batch, read back through every report that has
// usage columns, in every period and in zones of half-hour offsets and
// clock changes. In every row idle ≤ allocated and used ≤ allocated;
// each period's TOTAL (and the sum of its rows) is Σ GPUs × the jobs'
// seconds clipped to the period, computed here from the jobs made; over
// the whole time, used and idle are the samples'. The job list and the
// job detail hold each job and each GPU to the same bounds.
func TestReportInvariantsProperty(t *testing.T) {
	seeds := 3
	if testing.Short() {
		seeds = 1
	}
	ctx := context.Background()
	periods := []timespec.Period{timespec.None, timespec.Day, timespec.Week, timespec.Month}
	for seed := 1; seed <= seeds; seed++ {
		t.Run(fmt.Sprint("seed", seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(uint64(seed), 14))
			jobs, base, now := pScenario(r)
			db := openTest(t, buildSampledLedger(t, jobs, now))
			var allUsed, allIdle float64
			for _, j := range jobs {
				u, i := j.usedIdle()
				allUsed += u
				allIdle += i
			}
			for zi, zone := range pZones {
				loc, err := time.LoadLocation(zone)
				if err != nil {
					t.Fatal(err)
				}
				// A random window inside the jobs' time, two periods per zone
				// and seed (all four over two seeds: every report is ~50 ms
				// on a busy machine); in UTC also one window around all of
				// the jobs, whose TOTAL is every sample's.
				lo := base + r.Int64N(5*86400)
				hi := now - r.Int64N(5*86400)
				inside := HourWindow(timespec.Window{Start: time.Unix(lo, 0).In(loc), End: time.Unix(hi, 0).In(loc)})
				type view struct {
					w     timespec.Window
					p     timespec.Period
					whole bool
				}
				views := []view{{inside, periods[(zi+seed)%4], false}, {inside, periods[(zi+seed+2)%4], false}}
				if zone == "UTC" {
					all := HourWindow(timespec.Window{Start: time.Unix(base-86400, 0).In(loc), End: time.Unix(now+86400, 0).In(loc)})
					views = append(views, view{all, timespec.None, true})
				}
				for vi, v := range views {
					w, p := v.w, v.p
					bs := timespec.Buckets(w, p)
					want := clipped(jobs, bs, !*exact && !onHours(bs))
					for _, kind := range []string{"teams", "users", "accounts", "partitions", "nodes", "models", "tree", "top"} {
						name := fmt.Sprintf("%s/view%d/%s/%s", zone, vi, periodName(p), kind)
						req := Request{Kind: kind, Window: w, Period: p}
						if kind == "top" {
							req.Limit = MaxLimit // every row, so that TOTAL is the whole
						}
						tb, err := db.Report(ctx, req)
						if err != nil {
							t.Fatalf("%s: %v", name, err)
						}
						rows := readUsageRows(t, tb)
						checkUsageRows(t, name, kind, rows, want)
						if v.whole {
							checkWholeUsage(t, name, rows, allUsed, allIdle)
						}
					}
				}
			}
			checkJobs(t, db, jobs, now)
		})
	}
}

// onHours says whether every bucket starts and ends on a whole hour: not
// so for the days, weeks and months of a zone whose offset is not whole
// hours.
func onHours(bs []timespec.Bucket) bool {
	for _, b := range bs {
		if b.Start.Unix()%3600 != 0 || b.End.Unix()%3600 != 0 {
			return false
		}
	}
	return true
}

// clipped is each bucket's Σ GPUs × seconds of the jobs in it, by label.
// byHour places every hour of a job, as the hourly rollup holds it, in
// the bucket that the hour starts in.
func clipped(jobs []*pjob, bs []timespec.Bucket, byHour bool) map[string]int64 {
	want := map[string]int64{}
	for _, j := range jobs {
		if !byHour {
			for i, s := range timespec.Split(j.start, j.end, bs) {
				if s > 0 {
					want[bs[i].Label] += int64(len(j.gpus)) * s
				}
			}
			continue
		}
		for h := j.start / 3600 * 3600; h < j.end; h += 3600 {
			if i := timespec.Find(bs, h); i >= 0 {
				want[bs[i].Label] += int64(len(j.gpus)) * (min(j.end, h+3600) - max(j.start, h))
			}
		}
	}
	for p, a := range want {
		if a == 0 {
			delete(want, p)
		}
	}
	return want
}

// checkUsageRows holds every row to used ≤ alloc and idle ≤ alloc, and
// each period's TOTAL and its rows' sum to want.
func checkUsageRows(t *testing.T, name, kind string, rows []usageRow, want map[string]int64) {
	t.Helper()
	footer, sum := map[string]int64{}, map[string]int64{}
	for _, u := range rows {
		if !within(u.used, float64(u.alloc)) || !within(u.idle, float64(u.alloc)) || u.used < -1e-6 || u.idle < -1e-6 {
			t.Errorf("%s: %s %q: used %.6f, idle %.6f of %d allocated GPU-s", name, u.period, u.name, u.used, u.idle, u.alloc)
		}
		switch {
		case u.footer:
			footer[u.period] += u.alloc
		case kind == "tree" && !u.child:
			// Organisation and team rows hold their users' rows.
		default:
			sum[u.period] += u.alloc
		}
	}
	if diff := cmp.Diff(want, sum); diff != "" {
		t.Errorf("%s: Σ rows' allocated GPU-s per period (-jobs clipped +report):\n%s", name, diff)
	}
	for p, a := range footer {
		if a != want[p] {
			t.Errorf("%s: %s TOTAL %d allocated GPU-s, jobs clipped to it %d", name, p, a, want[p])
		}
	}
}

// checkWholeUsage holds the rows of a window around every job to the
// samples' used and idle GPU-seconds.
func checkWholeUsage(t *testing.T, name string, rows []usageRow, used, idle float64) {
	t.Helper()
	var u, i float64
	var total *usageRow
	for k, r := range rows {
		if r.footer {
			total = &rows[k]
		}
	}
	if total == nil {
		t.Errorf("%s: no TOTAL row", name)
		return
	}
	u, i = total.used, total.idle
	if !nearly(u, used) || !nearly(i, idle) {
		t.Errorf("%s: TOTAL used %.3f idle %.3f GPU-s, the samples' %.3f and %.3f", name, u, i, used, idle)
	}
}

// checkJobs holds the job list and each job's detail to the jobs made:
// allocated is GPUs × elapsed, used and idle are the samples' and within
// it, and per GPU idle and sampled time are within the job's elapsed.
func checkJobs(t *testing.T, db *Ledger, jobs []*pjob, now int64) {
	t.Helper()
	ctx := context.Background()
	byID := map[int64]*pjob{}
	for _, j := range jobs {
		byID[int64(j.id)] = j
	}
	seen := 0
	all := timespec.Window{Start: time.Unix(jobs[0].start-86400, 0).UTC(), End: time.Unix(now+86400, 0).UTC()}
	err := db.Jobs(ctx, JobsQuery{Window: all, Sort: "start", Now: time.Unix(now, 0)}, func(r *JobRow) bool {
		seen++
		j := byID[r.JobID]
		if j == nil {
			t.Errorf("job list: job %d was never made", r.JobID)
			return true
		}
		wantAlloc := int64(len(j.gpus)) * (j.end - j.start)
		used, idle := j.usedIdle()
		if r.AllocS != wantAlloc || !nearly(r.UsedS, used) || !nearly(r.IdleS, idle) {
			t.Errorf("job list: job %d (%d GPUs, %d s, running %v): alloc %d used %.3f idle %.3f, want %d, %.3f, %.3f",
				j.id, len(j.gpus), j.end-j.start, j.running, r.AllocS, r.UsedS, r.IdleS, wantAlloc, used, idle)
		}
		if !within(r.UsedS, float64(r.AllocS)) || !within(r.IdleS, float64(r.AllocS)) {
			t.Errorf("job list: job %d: used %.3f, idle %.3f of %d allocated GPU-s", j.id, r.UsedS, r.IdleS, r.AllocS)
		}
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen != len(jobs) {
		t.Errorf("job list: %d jobs, made %d", seen, len(jobs))
	}
	for _, j := range jobs {
		det, err := db.Job(ctx, "c1", JobSpec{ID: int64(j.id), Restart: -1}, time.Unix(now, 0))
		if err != nil {
			t.Fatalf("job %d: %v", j.id, err)
		}
		if len(det.GPUs) != len(j.gpus) {
			t.Errorf("job %d: detail has %d GPUs, made %d", j.id, len(det.GPUs), len(j.gpus))
		}
		// Each GPU is allocated for the job's elapsed time; its idle time
		// is its idle samples' intervals, cut at the job's end.
		perGPU := float64(j.end - j.start)
		idle := map[int]float64{}
		for _, s := range j.samples {
			if s.idle {
				hi := min(s.t+j.ivMS, j.end*1000)
				idle[s.gpu] += float64(hi-s.t) / 1000
			}
		}
		for _, g := range det.GPUs {
			if !within(g.IdleS, g.SampleS) || !within(g.SampleS, perGPU) {
				t.Errorf("job %d GPU %s: idle %.3f s, sampled %.3f s of %.0f s allocated", j.id, g.UUID, g.IdleS, g.SampleS, perGPU)
			}
			if g.Index == nil {
				t.Errorf("job %d GPU %s: no index", j.id, g.UUID)
			} else if !nearly(g.IdleS, idle[int(*g.Index)]) {
				t.Errorf("job %d GPU %d: idle %.3f s, its samples' %.3f s", j.id, *g.Index, g.IdleS, idle[int(*g.Index)])
			}
		}
	}
}
