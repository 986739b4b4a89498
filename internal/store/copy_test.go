package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// copyT0 is half an hour before a month ends, so that the samples fall
// into two month partitions on PostgreSQL.
var copyT0 = time.Date(2026, 1, 31, 23, 30, 0, 0, time.UTC)

// copyEvent is an event of job on node with gpus GPUs.
func copyEvent(kind record.Kind, job uint64, user, node string, at time.Time, gpus int) *record.Event {
	e := &record.Event{Schema: record.EventSchema, Kind: kind, Time: at, Cluster: "c", Node: node}
	e.Job.ID, e.Job.User, e.Job.Account, e.Job.Partition = job, user, "physics", "gpu"
	for i := range gpus {
		e.Job.GPUs = append(e.Job.GPUs, i)
	}
	e.Key = record.EventKey("c", job, 0, node, kind)
	return e
}

// copyFixture writes a SQLite ledger through the store's own writer: two
// nodes, three jobs (one still running), samples over two months, a
// pass, ingested files, applied keys, notes, Slurm's account tree, events
// and reservations (every table has rows), and the marks of the copy it
// was itself made by.
func copyFixture(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "src.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	now := copyT0.Add(6 * time.Hour)
	tokyo, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	batchOf(t, s, now, func(b *Batch) error {
		// Zone rollups from the first hour: the writer fills them.
		if err := b.KeepZoneRollups(tokyo); err != nil {
			return err
		}
		if err := b.SetSlurmAccounts([]SlurmAccount{{Cluster: "c", Account: "physics", Parent: "science"},
			{Cluster: "c", Account: "science", Parent: "root"}}); err != nil {
			return err
		}
		if err := b.SetBillingWeights("c", BillingSlurm, copyT0.Unix()-86400, []BillingWeights{{Partition: "gpu", Weights: "GRES/gpu=2.0"}}); err != nil {
			return err
		}
		t0 := copyT0.Unix()
		if err := b.SetClusterFacts(ClusterFacts{From: t0, To: t0 + 6*3600,
			Events: []SlurmEvent{{Cluster: "c", Start: t0 - 86400, GPUs: 3},
				{Cluster: "c", Node: "n2", Start: t0 + 3600, End: t0 + 7200, State: 0x201, Reason: "fan", GPUs: 1},
				{Cluster: "c", Node: "n1", Start: t0 + 5*3600, State: 1, Reason: "down", GPUs: 2}},
			Reservations: []SlurmReservation{{Cluster: "c", ID: 4, Name: "maint", Start: t0 + 7200, End: t0 + 9000,
				Flags: "MAINT", Nodes: "n[1-2]", GPUs: 3}}}); err != nil {
			return err
		}
		for _, e := range []*record.Event{
			copyEvent(record.JobStart, 5, "alice", "n1", copyT0, 2),
			copyEvent(record.JobStart, 5, "alice", "n2", copyT0, 1),
			copyEvent(record.JobStart, 6, "bob", "n2", copyT0.Add(time.Hour), 1),
			copyEvent(record.JobStart, 7, "carol", "n1", copyT0.Add(2*time.Hour), 1),
		} {
			if err := b.Event(e); err != nil {
				return err
			}
		}
		return nil
	})
	util := []uint32{0, 35, 80}
	for gi, node := range []string{"n1", "n1", "n2"} {
		batchOf(t, s, now, func(b *Batch) error {
			h := &record.SegmentHeader{Cluster: "c", Node: node, Seq: uint64(gi + 1), Interval: 60,
				Key: fmt.Sprintf("seg-%d", gi), Metrics: []string{"sm_active_pct"}}
			if gi == 1 {
				h.Unsupported = map[string][]string{"GPU-00000000-0000-0000-0000-000000000001": {"sm_active_pct: GPM not supported by this GPU"}}
			}
			var ss []record.Sample
			for i := range 150 {
				u := util[(i+gi)%len(util)]
				e := uint64(1000000 + i*6000*(gi+1))
				job := uint64(5)
				if node == "n2" && i >= 60 {
					job = 6
				}
				ss = append(ss, record.Sample{Time: copyT0.Add(time.Duration(i) * time.Minute),
					UUID: fmt.Sprintf("GPU-00000000-0000-0000-0000-00000000000%d", gi), Index: gi % 2,
					GPUUtil: &u, EnergyMJ: &e, Jobs: []record.JobShare{{Job: job, Share: 1}}})
				if gi == 0 {
					ss[i].Metrics = map[string]float64{"sm_active_pct": float64(u) * 0.9}
				}
			}
			if _, err := b.Segment(h, ss); err != nil {
				return err
			}
			return b.KeyApplied(h.Key, fmt.Sprintf("%064d", gi))
		})
	}
	batchOf(t, s, now, func(b *Batch) error {
		for _, e := range []*record.Event{
			copyEvent(record.JobEnd, 5, "alice", "n1", copyT0.Add(150*time.Minute), 2),
			copyEvent(record.JobEnd, 5, "alice", "n2", copyT0.Add(60*time.Minute), 1),
			copyEvent(record.JobEnd, 6, "bob", "n2", copyT0.Add(150*time.Minute), 1),
		} {
			if err := b.Event(e); err != nil {
				return err
			}
		}
		for gi := range 2 {
			uuid := fmt.Sprintf("GPU-00000000-0000-0000-0000-00000000000%d", gi)
			if err := b.JobGPU(&record.JobGPU{Schema: record.JobGPUSchema, Key: record.JobGPUKey("c", 5, 0, "n1", uuid), Seq: 3, Final: true,
				Cluster: "c", Node: "n1", Job: 5, UUID: uuid, Index: gi, Model: "H100", First: copyT0, Last: copyT0.Add(149 * time.Minute),
				Samples: 150, SampleSeconds: 9000, UtilSeconds: 3450.5, UtilMax: 80, MemMaxMiB: 1000, EnergyMJ: 894000,
				Quality: map[string]uint64{"power": 2}}); err != nil {
				return err
			}
		}
		gu := "GPU-00000000-0000-0000-0000-000000000000"
		for i, kind := range []record.GPUEventKind{record.GPUXid, record.GPUThrottleStart} {
			at := copyT0.Add(time.Duration(90+i) * time.Minute)
			ev := &record.GPUEvent{Schema: record.GPUEventSchema, Kind: kind, Time: at, Cluster: "c", Node: "n1", UUID: gu, Suppressed: uint64(i)}
			if kind == record.GPUXid {
				ev.Code = 79
			} else {
				ev.Reason = record.ThrottlePower
			}
			ev.Key = record.GPUEventKey("c", "n1", gu, at, kind, ev.Code, ev.Reason)
			if err := b.GPUEvent(ev); err != nil {
				return err
			}
		}
		for i := range 3 {
			if err := b.FileIngested(fmt.Sprintf("n%d", i%2+1), fmt.Sprintf("f%d.jsonl", i), fmt.Sprintf("%064d", i), 100+i, 10*i); err != nil {
				return err
			}
		}
		gpu := 1
		for i, n := range []Note{
			{Cluster: "c", Node: "n1", Until: now.Add(time.Hour), Text: "booked", Author: "alice", UID: 1000, Created: now},
			{Cluster: "c", Node: "n2", GPU: &gpu, Until: now.Add(2 * time.Hour), Text: `fan "noisy"`, Author: "bob", UID: 1001, Created: now},
		} {
			if _, err := b.AddNote(n, fmt.Sprintf("req-%d", i)); err != nil {
				return err
			}
		}
		job := int64(5)
		if _, _, err := b.EnqueueNotify(NotifyMessage{Key: "idle:c:5+0:alice", Rule: "idle", Recipient: "alice@example.org", Channel: "mail",
			Cluster: "c", Job: &job, User: "alice", Subject: "idle", Body: "GPUs idle", Created: now}); err != nil {
			return err
		}
		if err := b.SetNotifyOptOut("bob", "idle", true, now); err != nil {
			return err
		}
		if err := b.SetResources(1, Resources{AllocCPUs: 4, Nodes: 1, Elapsed: time.Hour, TimeLimit: Known(7200),
			ReqMem: Known(8 << 30), TotalCPU: Known(3_600_000), MaxRSS: Known(2 << 30)}); err != nil {
			return err
		}
		if _, err := b.PruneSamples(copyT0.Add(5 * time.Minute)); err != nil {
			return err
		}
		return b.ExtendOpen()
	})
	// Housekeeping a day later folds January's series buckets into
	// series_packs; February's stay rows.
	batchOf(t, s, copyT0.Add(25*time.Hour), func(b *Batch) error {
		_, err := b.PruneSamples(copyT0.Add(5 * time.Minute))
		return err
	})
	for i := range 2 {
		p := Pass{Started: now.Add(time.Duration(i) * time.Minute), Finished: now.Add(time.Duration(i)*time.Minute + time.Second), OK: i == 0, Files: 3, Records: 30}
		if i == 1 {
			p.Error = "disk full"
		}
		if err := s.RecordPass(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	// The source was itself copied from elsewhere: that copy's marks are
	// not the ledger's and do not travel.
	ledgerdb.Exec(t, path, `INSERT INTO meta(key, value) VALUES ('migrate.source', '/old/acct.db'), ('migrate.table.jobs', '{"rows":3,"done":true}')`)
	return path
}

// openAt opens the ledger at l (a reader when ro).
func openAt(t testing.TB, l ledgerdb.Ledger, ro bool) *Ledger {
	t.Helper()
	s, err := Open(context.Background(), Options{Path: l.Path, URL: l.URL, ReadOnly: ro})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ledgerDump is every copied row of the ledger at loc, table by table in key
// order, as text: two ledgers with equal dumps hold the same data.
func ledgerDump(t *testing.T, loc string) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, tb := range copyTables() {
		q := `SELECT * FROM ` + quoteIdent(tb.name)
		if tb.where != "" {
			q += ` WHERE ` + tb.where
		}
		out[tb.name] = ledgerdb.Strings(t, loc, q+` ORDER BY `+quoteIdents(tb.key))
	}
	return out
}

// sourceCounts is the row count of each table in the ledger at loc.
func sourceCounts(t *testing.T, loc string) []TableCopy {
	t.Helper()
	var out []TableCopy
	for _, tb := range copyTables() {
		q := `SELECT count(*) FROM ` + quoteIdent(tb.name)
		if tb.where != "" {
			q += ` WHERE ` + tb.where
		}
		n := ledgerdb.Scalar[int64](t, loc, q)
		if n == 0 {
			t.Fatalf("fixture: table %s is empty; every table must hold rows for the copy to be tested", tb.name)
		}
		out = append(out, TableCopy{Table: tb.name, Copied: n, Rows: n})
	}
	return out
}

// TestPostgresCopyFromSQLite copies a SQLite ledger into PostgreSQL, back
// into a new SQLite file and into a second PostgreSQL database: every row
// comes back as it was, the
// samples sit in their month partitions, a second run copies nothing,
// and the writer's next ids follow the copied ones.
func TestPostgresCopyFromSQLite(t *testing.T) {
	ctx := context.Background()
	srcPath := copyFixture(t)
	want := sourceCounts(t, srcPath)
	pg := ledgerdb.Ledger{URL: ledgerdb.NewPostgresDB(t)}
	src := openAt(t, ledgerdb.Ledger{Path: srcPath}, true)
	dst := openAt(t, pg, false)
	res, err := Copy(ctx, src, dst, CopyOptions{Batch: 40})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(CopyResult{Tables: want}, res); diff != "" {
		t.Errorf("copy to PostgreSQL (-want +got):\n%s", diff)
	}
	// Only partitions holding rows: which empty ones exist (months made
	// ahead of time) is the writer's business, not the copy's.
	parts := ledgerdb.Strings(t, pg.URL, `SELECT c.relname::text || ':' || n FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
 CROSS JOIN LATERAL (SELECT coalesce(sum(p.n), 0) AS n FROM sample_packs p WHERE tableoid = c.oid) k
 WHERE i.inhparent = 'sample_packs'::regclass AND n > 0 ORDER BY 1`)
	if diff := cmp.Diff([]string{"sample_packs_202601:75", "sample_packs_202602:360"}, parts); diff != "" {
		t.Errorf("samples partitions:rows (-want +got):\n%s", diff)
	}

	again, err := Copy(ctx, src, dst, CopyOptions{Batch: 40})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		want[i].Copied = 0
	}
	if diff := cmp.Diff(CopyResult{Resumed: true, Tables: want}, again); diff != "" {
		t.Errorf("second copy (-want +got):\n%s", diff)
	}

	back := ledgerdb.Ledger{Path: filepath.Join(t.TempDir(), "back.db")}
	dst.Close()
	pgSrc := openAt(t, pg, true)
	dst2 := openAt(t, back, false)
	if _, err := Copy(ctx, pgSrc, dst2, CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	dst2.Close()
	if diff := cmp.Diff(ledgerDump(t, srcPath), ledgerDump(t, back.Path)); diff != "" {
		t.Errorf("SQLite → PostgreSQL → SQLite changed rows (-src +back):\n%s", diff)
	}
	pg2 := ledgerdb.Ledger{URL: ledgerdb.NewPostgresDB(t)}
	dst3 := openAt(t, pg2, false)
	if _, err := Copy(ctx, pgSrc, dst3, CopyOptions{Batch: 100}); err != nil {
		t.Fatalf("PostgreSQL → PostgreSQL: %v", err)
	}
	dst3.Close()
	if diff := cmp.Diff(ledgerDump(t, pg.URL), ledgerDump(t, pg2.URL)); diff != "" {
		t.Errorf("PostgreSQL → PostgreSQL changed rows (-src +copy):\n%s", diff)
	}

	w := openAt(t, pg, false)
	b, err := w.Begin(ctx, copyT0)
	if err != nil {
		t.Fatal(err)
	}
	node, err := b.Node("c", "n3")
	if err != nil {
		b.Rollback()
		t.Fatalf("a new node after the copy: %v", err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if node != 3 {
		t.Errorf("the first node added after the copy got id %d, want 3", node)
	}
}

// TestCopyResumes interrupts a copy after a few batches and runs it again:
// it goes on after the last committed batch, and the totals agree.
func TestCopyResumes(t *testing.T) {
	ctx := context.Background()
	srcPath := copyFixture(t)
	want := sourceCounts(t, srcPath)
	l := ledgerdb.NewLedger(t)
	src := openAt(t, ledgerdb.Ledger{Path: srcPath}, true)
	for _, stopAfter := range []int{3, 7} {
		dst := openAt(t, l, false)
		cctx, cancel := context.WithCancel(ctx)
		batches := 0
		_, err := Copy(cctx, src, dst, CopyOptions{Batch: 25, Progress: func(CopyProgress) {
			if batches++; batches == stopAfter {
				cancel()
			}
		}})
		cancel()
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("interrupted after %d batches: err %v, want context.Canceled", stopAfter, err)
		}
		dst.Close()
	}
	held := ledgerdb.Scalar[int64](t, l.Loc(), `SELECT count(*) FROM sample_packs`)
	if held == 0 || held >= want[5].Rows {
		t.Fatalf("after the interruptions the destination holds %d sample packs, want some of %d", held, want[5].Rows)
	}
	dst := openAt(t, l, false)
	var seen []string
	res, err := Copy(ctx, src, dst, CopyOptions{Batch: 25, Progress: func(p CopyProgress) {
		if p.Done {
			seen = append(seen, p.Table)
		}
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Resumed {
		t.Error("the rerun says it did not resume")
	}
	var copied, total int64
	for i, tc := range res.Tables {
		if tc.Rows != want[i].Rows {
			t.Errorf("%s: %d rows, want %d", tc.Table, tc.Rows, want[i].Rows)
		}
		copied += tc.Copied
		total += tc.Rows
	}
	if copied >= total || copied == 0 {
		t.Errorf("the rerun copied %d of %d rows: it did not resume", copied, total)
	}
	if diff := cmp.Diff(slices.Collect(func(yield func(string) bool) {
		for _, tb := range copyTables() {
			if !yield(tb.name) {
				return
			}
		}
	}), seen); diff != "" {
		t.Errorf("tables reported done (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(ledgerDump(t, srcPath), ledgerDump(t, l.Loc())); diff != "" {
		t.Errorf("resumed copy differs from its source (-src +dst):\n%s", diff)
	}
}

// TestCopyRefuses: a destination that holds another ledger, or a copy of
// another source, a source at another schema version, a source with a
// table migrate does not know, a batch out of range.
func TestCopyRefuses(t *testing.T) {
	ctx := context.Background()
	srcPath := copyFixture(t)
	for _, tc := range []struct {
		name string
		// prepare makes the source and destination.
		prepare func(t *testing.T) (src string, dst ledgerdb.Ledger)
		batch   int
		want    string
	}{
		{"destination holds a ledger", func(t *testing.T) (string, ledgerdb.Ledger) {
			l := ledgerdb.NewLedger(t)
			w := openAt(t, l, false)
			if err := w.RecordPass(ctx, Pass{Started: copyT0, Finished: copyT0}); err != nil {
				t.Fatal(err)
			}
			w.Close()
			return srcPath, l
		}, 0, "already holds a ledger (table passes has rows) that is not a copy of"},
		{"destination copies another source", func(t *testing.T) (string, ledgerdb.Ledger) {
			other := filepath.Join(t.TempDir(), "other.db")
			w, err := Open(ctx, Options{Path: other})
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			l := ledgerdb.NewLedger(t)
			src := openAt(t, ledgerdb.Ledger{Path: other}, true)
			dst := openAt(t, l, false)
			if _, err := Copy(ctx, src, dst, CopyOptions{}); err != nil {
				t.Fatal(err)
			}
			dst.Close()
			return srcPath, l
		}, 0, "holds a copy of"},
		{"schema versions differ", func(t *testing.T) (string, ledgerdb.Ledger) {
			old := filepath.Join(t.TempDir(), "old.db")
			w, err := Open(ctx, Options{Path: old})
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			ledgerdb.Exec(t, old, fmt.Sprintf(`PRAGMA user_version = %d`, len(mustMigrations(EngineSQLite))-1))
			return old, ledgerdb.NewLedger(t)
		}, 0, fmt.Sprintf("is at schema %d, destination", len(mustMigrations(EngineSQLite))-1)},
		{"unknown table", func(t *testing.T) (string, ledgerdb.Ledger) {
			odd := filepath.Join(t.TempDir(), "odd.db")
			w, err := Open(ctx, Options{Path: odd})
			if err != nil {
				t.Fatal(err)
			}
			w.Close()
			ledgerdb.Exec(t, odd, `CREATE TABLE extra (x INTEGER)`)
			return odd, ledgerdb.NewLedger(t)
		}, 0, `holds table "extra", which this gpuacct cannot copy`},
		{"batch too large", func(t *testing.T) (string, ledgerdb.Ledger) {
			return srcPath, ledgerdb.NewLedger(t)
		}, MaxCopyBatch + 1, "batch of 1000001 rows: want 1 to 1000000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srcLoc, l := tc.prepare(t)
			src := openAt(t, ledgerdb.Ledger{Path: srcLoc}, true)
			dst := openAt(t, l, false)
			before := ledgerdb.Strings(t, l.Loc(), `SELECT key || '=' || value FROM meta ORDER BY key`)
			_, err := Copy(ctx, src, dst, CopyOptions{Batch: tc.batch})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v, want one saying %q", err, tc.want)
			}
			if diff := cmp.Diff(before, ledgerdb.Strings(t, l.Loc(), `SELECT key || '=' || value FROM meta ORDER BY key`)); diff != "" {
				t.Errorf("a refused copy changed the destination's meta (-before +after):\n%s", diff)
			}
		})
	}
}

// TestCopyVerifyNamesMismatches: a destination that lost a sample and
// whose job figures moved fails verification, naming both figures.
func TestCopyVerifyNamesMismatches(t *testing.T) {
	ctx := context.Background()
	srcPath := copyFixture(t)
	l := ledgerdb.NewLedger(t)
	src := openAt(t, ledgerdb.Ledger{Path: srcPath}, true)
	dst := openAt(t, l, false)
	if _, err := Copy(ctx, src, dst, CopyOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := Verify(ctx, src, dst); err != nil {
		t.Fatalf("verify after a copy: %v", err)
	}
	ledgerdb.Exec(t, l.Loc(), `UPDATE jobs SET used_gpu_s = used_gpu_s + 1.5, energy_mj = energy_mj + 7 WHERE id = 1`)
	ledgerdb.Exec(t, l.Loc(), `DELETE FROM sample_packs WHERE t0_ms = (SELECT max(t0_ms) FROM sample_packs) AND gpu_id = 1`)
	used := ledgerdb.Scalar[float64](t, srcPath, `SELECT sum(used_gpu_s) FROM jobs`)
	energy := ledgerdb.Scalar[int64](t, srcPath, `SELECT sum(energy_mj) FROM jobs`)
	packs := ledgerdb.Scalar[int64](t, srcPath, `SELECT count(*) FROM sample_packs`)
	_, err := Verify(ctx, src, dst)
	if err == nil {
		t.Fatal("verify passed a changed destination")
	}
	for _, want := range []string{
		fmt.Sprintf("jobs: sum(energy_mj) is %d in the source, %d in the destination", energy, energy+7),
		fmt.Sprintf("jobs: sum(used_gpu_s) is %g in the source, %g in the destination", used, used+1.5),
		fmt.Sprintf("sample_packs has %d rows in the source, %d in the destination", packs, packs-1),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("verify said %q, want it to say %q", err, want)
		}
	}
}

// TestCopyKnowsEveryTable: every table the migrations make, on both
// engines, is one Copy copies, and no other.
func TestCopyKnowsEveryTable(t *testing.T) {
	re := regexp.MustCompile(`(?i)CREATE TABLE (?:IF NOT EXISTS )?(\w+)`)
	// A table a later migration renames is known by its new name.
	rename := regexp.MustCompile(`(?i)ALTER TABLE (\w+) RENAME TO (\w+)`)
	var want []string
	for _, tb := range copyTables() {
		want = append(want, tb.name)
	}
	slices.Sort(want)
	for _, engine := range []string{EngineSQLite, EnginePostgres} {
		var got []string
		for _, m := range mustMigrations(engine) {
			for _, sm := range re.FindAllStringSubmatch(m.sql, -1) {
				if name := sm[1]; !strings.HasPrefix(name, "samples_") {
					got = append(got, name)
				}
			}
			for _, sm := range rename.FindAllStringSubmatch(m.sql, -1) {
				if i := slices.Index(got, sm[1]); i >= 0 {
					got[i] = sm[2]
				}
			}
		}
		// Migration 0021's Go step packs samples into sample_packs and
		// drops it; 0023's moves applied_keys_text into applied_keys.
		got = slices.DeleteFunc(got, func(name string) bool { return name == "samples" || name == "applied_keys_text" })
		slices.Sort(got)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: tables Copy knows (-) and the migrations make (+):\n%s", engine, diff)
		}
	}
}

// BenchmarkPostgresCopySamples copies a SQLite ledger of 8 GPUs' samples
// (25 000 each, a month of 10-second readings per GPU spread over two
// months) into PostgreSQL, in batches of DefaultCopyBatch rows.
func BenchmarkPostgresCopySamples(b *testing.B) {
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "big.db")
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		b.Fatal(err)
	}
	const gpus, per, chunk = 8, 25000, 5000
	util := uint32(40)
	for g := range gpus {
		for from := 0; from < per; from += chunk {
			bt, err := s.Begin(ctx, copyT0)
			if err != nil {
				b.Fatal(err)
			}
			var ss []record.Sample
			for i := from; i < from+chunk; i++ {
				e := uint64(1000 + i*2000)
				ss = append(ss, record.Sample{Time: copyT0.Add(time.Duration(i) * 10 * time.Second),
					UUID: fmt.Sprintf("GPU-%08d-0000-0000-0000-000000000000", g), GPUUtil: &util, EnergyMJ: &e})
			}
			if _, err := bt.Segment(&record.SegmentHeader{Cluster: "c", Node: fmt.Sprintf("n%d", g/4), Seq: uint64(g*per + from), Interval: 10}, ss); err != nil {
				bt.Rollback()
				b.Fatal(err)
			}
			if err := bt.Commit(); err != nil {
				b.Fatal(err)
			}
		}
	}
	s.Close()
	src := openAt(b, ledgerdb.Ledger{Path: path}, true)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		dst, err := Open(ctx, Options{URL: ledgerdb.NewPostgresDB(b)})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		res, err := Copy(ctx, src, dst, CopyOptions{})
		if err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if res.Tables[5].Rows != gpus*per {
			b.Fatalf("copied %d samples, want %d", res.Tables[5].Rows, gpus*per)
		}
		dst.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(gpus*per*b.N)/b.Elapsed().Seconds(), "samples/s")
}

// TestCopyHoldsSourceLock: a copy or a verification refuses a source
// whose writer runs, in one line that says to stop it, and a writer
// started during a copy is refused, naming gpuacct migrate.
func TestCopyHoldsSourceLock(t *testing.T) {
	ctx := context.Background()
	srcL := ledgerdb.NewLedger(t)
	w := openAt(t, srcL, false)
	if err := w.RecordPass(ctx, Pass{Started: copyT0, Finished: copyT0, OK: true}); err != nil {
		t.Fatal(err)
	}
	src := openAt(t, srcL, true)
	dstL := ledgerdb.NewLedger(t)
	dst := openAt(t, dstL, false)
	for name, run := range map[string]func() error{
		"copy":   func() error { _, err := Copy(ctx, src, dst, CopyOptions{}); return err },
		"verify": func() error { _, err := Verify(ctx, src, dst); return err },
	} {
		err := run()
		if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), "stop gpuacct serve/ingest on the source first") || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s while the source's writer runs: err %v, want one line with ErrLocked saying to stop serve/ingest", name, err)
		}
	}
	if n := ledgerdb.Scalar[int64](t, dstL.Loc(), `SELECT count(*) FROM meta WHERE key LIKE 'migrate.%'`); n != 0 {
		t.Errorf("a refused copy marked the destination (%d migrate keys)", n)
	}
	w.Close()

	var during error
	tried := false
	res, err := Copy(ctx, src, dst, CopyOptions{Batch: 1, Progress: func(CopyProgress) {
		if tried {
			return
		}
		tried = true
		w2, err := Open(ctx, Options{Path: srcL.Path, URL: srcL.URL})
		if err == nil {
			w2.Close()
		}
		during = err
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !errors.Is(during, ErrLocked) || !strings.Contains(during.Error(), "gpuacct migrate pid") {
		t.Errorf("a writer opened during the copy: err %v, want ErrLocked naming gpuacct migrate", during)
	}
	if res.Tables[slices.IndexFunc(res.Tables, func(tc TableCopy) bool { return tc.Table == "passes" })].Rows != 1 {
		t.Errorf("copy result %+v, want the one pass", res)
	}
	// The lock is given back: the writer starts again.
	openAt(t, srcL, false)
}

// TestCopyVerifySeesContent: after a copy, changes that keep every row
// count and total (a job's state, end and user, a node's name, NULL for
// the empty text, a real's last bit, a row swapped for another) fail verification,
// naming the table and the first differing key.
func TestCopyVerifySeesContent(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		// change alters the source (src) or the destination.
		src    bool
		change []string
		want   []string
	}{
		{"source rows changed after the copy", true, []string{
			`UPDATE jobs SET state = 'COMPLETED', "end" = 5000, user = 'mallory' WHERE id = 1`,
			`UPDATE nodes SET name = 'renamed' WHERE id = 2`,
		}, []string{
			`jobs: row id=1 differs: user="mallory" end=5000 state="COMPLETED" in the source, user="alice" end=`,
			`nodes: row id=2 differs: name="renamed" in the source, name="n2" in the destination`,
		}},
		{"NULL for empty text", false, []string{`UPDATE jobs SET comment = '' WHERE id = 2`},
			[]string{`jobs: row id=2 differs: comment=NULL in the source, comment="" in the destination`}},
		{"a real's last bit", false, []string{`UPDATE job_gpus SET util_s = 3450.5000000000005 WHERE gpu_id = 2`},
			[]string{`job_gpus: row job=1, gpu_id=2 differs: util_s=3450.5 in the source, util_s=3450.5000000000005 in the destination`}},
		{"a row swapped for another", false, []string{
			`DELETE FROM applied_keys WHERE key_hi = (SELECT min(key_hi) FROM applied_keys)`,
			`INSERT INTO applied_keys(key_hi, key_lo, content, at) SELECT key_hi, key_lo - 1, content, at FROM applied_keys WHERE key_hi = (SELECT max(key_hi) FROM applied_keys)`,
		}, []string{`applied_keys: row key_hi=`, `is in the source only`}},
		{"meta value", false, []string{`UPDATE meta SET value = value || 'x' WHERE key = (SELECT min(key) FROM meta WHERE key NOT LIKE 'migrate.%')`},
			[]string{`meta: row key=`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srcPath := copyFixture(t)
			l := ledgerdb.NewLedger(t)
			src := openAt(t, ledgerdb.Ledger{Path: srcPath}, true)
			dst := openAt(t, l, false)
			if _, err := Copy(ctx, src, dst, CopyOptions{Batch: 7}); err != nil {
				t.Fatal(err)
			}
			loc := l.Loc()
			if tc.src {
				loc = srcPath
			}
			for _, q := range tc.change {
				ledgerdb.Exec(t, loc, q)
			}
			_, err := Verify(ctx, src, dst)
			if err == nil {
				t.Fatal("verify passed ledgers whose rows differ")
			}
			for _, want := range tc.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("verify said:\n%v\nwant it to say %q", err, want)
				}
			}
			if strings.Contains(err.Error(), " rows in the source,") || strings.Contains(err.Error(), "sum(") {
				t.Errorf("verify found counts or totals differ, want only content: %v", err)
			}
		})
	}
}

// TestCopyRealsRoundTrip: reals that no short decimal holds go to the
// other engine and back with the same canonical text (the digest of the
// engines' own answers), and verification passes.
func TestCopyRealsRoundTrip(t *testing.T) {
	ctx := context.Background()
	srcPath := copyFixture(t)
	reals := []string{"0.1", "1.0/3", "1e-300", "1.7976931348623157e308", "-2.5e-7", "9007199254740993.0", "-0.0", "4.9e-324", "123456789.123456789"}
	for i, r := range reals {
		ledgerdb.Exec(t, srcPath, fmt.Sprintf(`UPDATE job_gpus SET sample_s = %s WHERE gpu_id = %d`, r, i%2+1))
		ledgerdb.Exec(t, srcPath, fmt.Sprintf(`UPDATE jobs SET used_gpu_s = used_gpu_s, idle_gpu_s = %s WHERE id = %d`, r, i%3+1))
		l := ledgerdb.NewLedger(t)
		src := openAt(t, ledgerdb.Ledger{Path: srcPath}, true)
		dst := openAt(t, l, false)
		if _, err := Copy(ctx, src, dst, CopyOptions{}); err != nil {
			t.Fatalf("real %s: %v", r, err)
		}
		got := ledgerdb.Scalar[float64](t, l.Loc(), fmt.Sprintf(`SELECT sample_s FROM job_gpus WHERE gpu_id = %d`, i%2+1))
		want := ledgerdb.Scalar[float64](t, srcPath, fmt.Sprintf(`SELECT sample_s FROM job_gpus WHERE gpu_id = %d`, i%2+1))
		a, _ := appendValue(nil, got)
		b, _ := appendValue(nil, want)
		if string(a) != string(b) {
			t.Errorf("real %s reads %s in the copy, %s in the source", r, a, b)
		}
		src.Close()
		dst.Close()
	}
}

// TestCopyCanonicalText: the canonical text tells NULL, the empty text, 0 and 0.5
// apart, and a whole real from its integer not.
func TestCopyCanonicalText(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{nil, "N"}, {"", "S0:"}, {"a:b", "S3:a:b"}, {int64(0), "I0;"}, {int64(-7), "I-7;"},
		{5.0, "I5;"}, {math.Copysign(0, -1), "I0;"}, {0.5, "F0.5;"}, {0.1, "F0.1;"},
		{1e300, "F1e+300;"}, {true, "I1;"}, {int32(3), "I3;"},
	} {
		got, err := appendValue(nil, tc.v)
		if err != nil || string(got) != tc.want {
			t.Errorf("canonical text of %#v: %q, %v; want %q", tc.v, got, err, tc.want)
		}
	}
	if _, err := appendValue(nil, struct{}{}); err == nil {
		t.Error("a value of no known type has a canonical text")
	}
}
