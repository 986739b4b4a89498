package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// openTemp is a writer on a new ledger of the engine under test.
func openTemp(t *testing.T) *Ledger {
	t.Helper()
	s, _ := openLedger(t)
	return s
}

// openLedger is openTemp with the ledger's location, for a second store
// (a reader) on it.
func openLedger(t *testing.T) (*Ledger, ledgerdb.Ledger) {
	t.Helper()
	l := ledgerdb.NewLedger(t)
	s, err := Open(context.Background(), Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, l
}

// dump is every row of a query as text, NULL as "NULL".
func dump(t *testing.T, db *ledgerDB, q string) []string {
	t.Helper()
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, _ := rows.Columns()
	var out []string
	for rows.Next() {
		vals := make([]sql.NullString, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			parts[i] = "NULL"
			if v.Valid {
				parts[i] = v.String
			}
		}
		out = append(out, strings.Join(parts, "|"))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSegmentColumns: a value absent from a sample is stored as NULL (0
// for job, restart, idle), a present one as itself, whichever columns a
// sample has; a sample already stored is not new.
func TestSegmentColumns(t *testing.T) {
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	const uuid = "GPU-00000000-0000-0000-0000-000000000001"
	tests := []struct {
		name string
		s    record.Sample
		want string // gpu_id|t_ms|interval_ms|job|restart|jobs|idle|util|mem_util|mem_used_mib|power_mw|energy_mj|energy_delta_mj|temp_c|sm_clock_mhz|throttle|ecc_errors|xid_errors|procs|foreign_procs|missing|metrics
	}{
		{"nothing known", record.Sample{Missing: []string{"all: ERROR_UNKNOWN"}},
			"1|T|10000|0|0|NULL|0|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|0|0|all: ERROR_UNKNOWN|NULL"},
		{"every value", record.Sample{Jobs: []record.JobShare{{Job: 7, Restart: 2, Share: 1, Idle: true}}, GPUUtil: u32(0), MemUtil: u32(3),
			MemUsedMiB: u64(4), MemTotalMiB: u64(5), PowerMW: u32(6), EnergyMJ: u64(7), TempC: u32(8), SMClockMHz: u32(9), Throttle: u64(10),
			ECCErrors: u64(11), XIDErrors: u64(12), Procs: []record.Proc{{PID: 1, Job: 7}, {PID: 2, Foreign: true}},
			Metrics: map[string]float64{"sm_active_pct": 41.5, "nvlink_tx_bytes_per_s": 1.3e11}},
			`1|T|10000|7|2|NULL|1|0|3|4|6|7|NULL|8|9|10|11|12|2|1|NULL|{"nvlink_tx_bytes_per_s":130000000000,"sm_active_pct":41.5}`},
		{"shared GPU", record.Sample{Jobs: []record.JobShare{{Job: 7, Share: 0.5}, {Job: 8, Share: 0.5}}, GPUUtil: u32(40)},
			`1|T|10000|7|0|[{"job":7,"restart":0,"share":0.5},{"job":8,"restart":0,"share":0.5}]|0|40|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|NULL|0|0|NULL|NULL`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			b, err := s.Begin(context.Background(), t0.Add(time.Hour))
			if err != nil {
				t.Fatal(err)
			}
			defer b.Rollback()
			smp := tt.s
			smp.Time, smp.UUID = t0, uuid
			for _, j := range smp.Jobs {
				e := ev(record.JobStart, "n1", t0.Add(-time.Hour), 1)
				e.Job.ID, e.Job.RestartCount = j.Job, j.Restart
				e.Key = record.EventKey("c", j.Job, j.Restart, "n1", record.JobStart)
				if err := b.Event(e); err != nil {
					t.Fatal(err)
				}
			}
			h := &record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 10}
			for round, wantNew := range []int{1, 0} {
				n, err := b.Segment(h, []record.Sample{smp})
				if err != nil {
					t.Fatal(err)
				}
				if n != wantNew {
					t.Errorf("round %d: %d new samples, want %d", round, n, wantNew)
				}
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			want := []string{strings.Replace(tt.want, "|T|", fmt.Sprintf("|%d|", t0.UnixMilli()), 1)}
			if d := cmp.Diff(want, dumpSamples(t, s, nil)); d != "" {
				t.Errorf("stored row (-want +got):\n%s", d)
			}
		})
	}
}

// TestEventsOneBatchOrMany: the same events give the same ledger whether
// they come in one batch (rerolls wait for its end) or one batch each.
func TestEventsOneBatchOrMany(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 30, 0, 0, time.UTC)
	now := t0.Add(5 * time.Hour)
	evs := []*record.Event{
		ev(record.JobEnd, "n1", t0.Add(150*time.Minute), 2), // end first, as file names sort
		ev(record.JobStart, "n1", t0, 2),
		ev(record.JobStart, "n2", t0.Add(time.Minute), 4), // still open: counts up to now
	}
	util := uint32(60)
	var samples []record.Sample
	for i := range 30 {
		samples = append(samples, record.Sample{Time: t0.Add(time.Duration(i) * time.Minute), UUID: "GPU-00000000-0000-0000-0000-000000000002",
			GPUUtil: &util, Jobs: []record.JobShare{{Job: 5, Share: 1}}})
	}
	ledger := func(batches [][]*record.Event) map[string][]string {
		s := openTemp(t)
		for _, batch := range batches {
			batchOf(t, s, now, func(b *Batch) error {
				for _, e := range batch {
					if err := b.Event(e); err != nil {
						return err
					}
				}
				return nil
			})
		}
		// After the events: a node's samples need its job's event.
		batchOf(t, s, now, func(b *Batch) error {
			_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n2", Seq: 1, Interval: 60}, samples)
			return err
		})
		out := map[string][]string{}
		for _, q := range []string{
			`SELECT job_id, user, nodes, gpus, start, end, state, alloc_gpu_s, used_gpu_s FROM jobs ORDER BY id`,
			`SELECT job, node_id, hour, alloc_gpu_s, used_gpu_s, sample_s, jobs FROM job_hours WHERE alloc_gpu_s != 0 OR used_gpu_s != 0 OR sample_s != 0 OR jobs != 0 ORDER BY 1, 2, 3`,
			`SELECT hour, user, node_id, alloc_gpu_s, used_gpu_s, jobs FROM rollup_hourly WHERE alloc_gpu_s != 0 OR used_gpu_s != 0 OR jobs != 0 ORDER BY 1, 2, 3`,
			`SELECT day, user, alloc_gpu_s, used_gpu_s, jobs FROM rollup_daily WHERE alloc_gpu_s != 0 OR used_gpu_s != 0 OR jobs != 0 ORDER BY 1, 2`,
			`SELECT month, user, alloc_gpu_s, used_gpu_s, jobs FROM rollup_monthly WHERE alloc_gpu_s != 0 OR used_gpu_s != 0 OR jobs != 0 ORDER BY 1, 2`,
		} {
			out[q] = dump(t, s.db, q)
		}
		return out
	}
	one := ledger([][]*record.Event{evs})
	many := ledger([][]*record.Event{{evs[0]}, {evs[1]}, {evs[2]}})
	if d := cmp.Diff(many, one); d != "" {
		t.Errorf("one batch differs from one batch per event (-many +one):\n%s", d)
	}
	// And the figures are the expected ones, not just equal.
	wantAlloc := int64(2*150*60 + 4*(5*3600-60))
	var alloc int64
	s := one[`SELECT job_id, user, nodes, gpus, start, end, state, alloc_gpu_s, used_gpu_s FROM jobs ORDER BY id`]
	if len(s) != 1 {
		t.Fatalf("jobs %v", s)
	}
	fmt.Sscanf(strings.Split(s[0], "|")[7], "%d", &alloc)
	if alloc != wantAlloc {
		t.Errorf("job %s: allocated %d GPU-s, want %d (open on n2 up to now)", s[0], alloc, wantAlloc)
	}
}

// TestNodeSeen: a node's newest record time is the newest over batches
// (an older record later does not move it back), stamped with the
// batch's time.
func TestNodeSeen(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		now     time.Time
		records []time.Time
		want    string // last_record|last_ingest
	}{
		{"first batch", t0.Add(time.Hour), []time.Time{t0.Add(5 * time.Minute), t0.Add(20 * time.Minute), t0}, fmt.Sprintf("%d|%d", t0.Add(20*time.Minute).Unix(), t0.Add(time.Hour).Unix())},
		{"older record later", t0.Add(2 * time.Hour), []time.Time{t0.Add(time.Minute)}, fmt.Sprintf("%d|%d", t0.Add(20*time.Minute).Unix(), t0.Add(2*time.Hour).Unix())},
		{"newer record", t0.Add(3 * time.Hour), []time.Time{t0.Add(150 * time.Minute)}, fmt.Sprintf("%d|%d", t0.Add(150*time.Minute).Unix(), t0.Add(3*time.Hour).Unix())},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := s.Begin(context.Background(), tt.now)
			if err != nil {
				t.Fatal(err)
			}
			node, err := b.Node("c", "n1")
			if err != nil {
				b.Rollback()
				t.Fatal(err)
			}
			for _, r := range tt.records {
				if err := b.NodeSeen(node, r); err != nil {
					b.Rollback()
					t.Fatal(err)
				}
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff([]string{tt.want}, dump(t, s.db, `SELECT last_record, last_ingest FROM nodes`)); d != "" {
				t.Errorf("node (-want +got):\n%s", d)
			}
		})
	}
}

// TestLaterEventMovesHours: a job run whose start gave no user or
// account, with samples counted in the same batch, then an end that
// gives them: every hour of the job moves to the user and account,
// though the batch made the job and knew it had no hours when it did.
func TestLaterEventMovesHours(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := openTemp(t)
	util := uint32(80)
	var samples []record.Sample
	for i := range 30 {
		samples = append(samples, record.Sample{Time: t0.Add(time.Duration(i) * time.Minute), UUID: "GPU-00000000-0000-0000-0000-000000000002",
			GPUUtil: &util, Jobs: []record.JobShare{{Job: 5, Share: 1}}})
	}
	batchOf(t, s, t0.Add(2*time.Hour), func(b *Batch) error {
		start := ev(record.JobStart, "n1", t0, 1)
		start.Job.User, start.Job.Account, start.Job.Partition = "", "", ""
		if err := b.Event(start); err != nil {
			return err
		}
		if _, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 60}, samples); err != nil {
			return err
		}
		return b.Event(ev(record.JobEnd, "n1", t0.Add(30*time.Minute), 1))
	})
	// Used GPU-seconds come from the samples' hours, which moveJob moves
	// (the allocation is counted again from the spans at the batch's end).
	want := []string{"alice|physics|1800|1440"}
	if d := cmp.Diff(want, dump(t, s.db, `SELECT user, account, sum(alloc_gpu_s), CAST(sum(used_gpu_s) AS INTEGER) FROM rollup_hourly GROUP BY user, account HAVING sum(alloc_gpu_s) <> 0 OR sum(used_gpu_s) <> 0`)); d != "" {
		t.Errorf("rollup_hourly by user and account (-want +got):\n%s", d)
	}
	if d := cmp.Diff(want, dump(t, s.db, `SELECT j.user, j.account, sum(h.alloc_gpu_s), CAST(sum(h.used_gpu_s) AS INTEGER) FROM job_hours h JOIN jobs j ON j.id = h.job GROUP BY j.user, j.account`)); d != "" {
		t.Errorf("job_hours by user and account (-want +got):\n%s", d)
	}
}

// TestSettleManyJobs: the batch's end rerolls every node of more jobs
// than one read of their nodes takes (jobSpans asks maxJobsAsked at a
// time), each once: every job is counted once, with its allocation.
func TestSettleManyJobs(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := openTemp(t)
	jobs := 2*maxJobsAsked + 1
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		for i := 1; i <= jobs; i++ {
			for _, node := range []string{"n1", "n2"} {
				e := ev(record.JobStart, node, t0, 1)
				e.Job.ID = uint64(i)
				e.Key = record.EventKey("c", e.Job.ID, 0, node, record.JobStart)
				if err := b.Event(e); err != nil {
					return err
				}
			}
		}
		return nil
	})
	want := []string{fmt.Sprintf("%d|%d|%d", 2*jobs, jobs, 2*jobs*3600)}
	if d := cmp.Diff(want, dump(t, s.db, `SELECT count(*), sum(CASE WHEN r_gpus < 0 THEN 1 ELSE 0 END), sum(r_end - r_start) FROM job_nodes WHERE r_start IS NOT NULL`)); d != "" {
		t.Errorf("rerolled job nodes: count, job counters, GPU-seconds (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{fmt.Sprintf("%d|%d", jobs, 2*jobs*3600)}, dump(t, s.db, `SELECT sum(jobs), sum(alloc_gpu_s) FROM rollup_hourly`)); d != "" {
		t.Errorf("rollup_hourly jobs and GPU-seconds (-want +got):\n%s", d)
	}
}

// dumpSamples is every stored sample as dump gives the rows of the old
// samples table, filtered by keep (nil: all).
func dumpSamples(t *testing.T, s *Ledger, keep func(vals []any) bool) []string {
	t.Helper()
	var out []string
	err := s.StoredSamples(context.Background(), func(vals []any) error {
		if keep != nil && !keep(vals) {
			return nil
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = "NULL"
			if v != nil {
				parts[i] = fmt.Sprint(v)
			}
		}
		out = append(out, strings.Join(parts, "|"))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
