package store

import (
	"bytes"
	"context"
	"database/sql"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

func TestPackStart(t *testing.T) {
	tests := []struct{ t, want int64 }{
		{0, 0},
		{samplePackMs - 1, 0},
		{samplePackMs, samplePackMs},
		{1_772_445_612_345, 1_772_445_600_000},
		{-1, -samplePackMs},
		{-samplePackMs, -samplePackMs},
	}
	for _, tt := range tests {
		if got := packStart(tt.t); got != tt.want {
			t.Errorf("packStart(%d) = %d, want %d", tt.t, got, tt.want)
		}
	}
}

// TestMergePack: a pack holds each time once, whatever order and however
// many times its samples come (a file shipped again stores nothing
// twice; a second sample at a stored time is ignored, as the table's
// insert-or-ignore does), and its bytes depend only on the samples.
func TestMergePack(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	run := steadyRun(rng, 4, 30)
	inOrder, _, err := mergePack(nil, 4, run)
	if err != nil {
		t.Fatal(err)
	}
	shuffled := append([]sampleRow(nil), run...)
	rng.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	other := run[7]
	other.put(colUtil, int64(3)) // same time, other content
	all := func(n int) []bool {
		b := make([]bool, n)
		for i := range b {
			b[i] = true
		}
		return b
	}
	tests := []struct {
		name      string
		old       []byte
		rows      []sampleRow
		wantAdded []bool
	}{
		{"shuffled", nil, shuffled, all(len(run))},
		{"again", inOrder, run, make([]bool, len(run))},
		{"second half after the first", mustMerge(t, run[:15]), run[15:], all(15)},
		{"first half after the second", mustMerge(t, run[15:]), run[:15], all(15)},
		{"a stored time, other content", inOrder, []sampleRow{other}, []bool{false}},
		{"twice in one batch", mustMerge(t, run[:29]), []sampleRow{run[29], run[29]}, []bool{true, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, added, err := mergePack(tt.old, 4, tt.rows)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantAdded, added); d != "" {
				t.Errorf("added (-want +got):\n%s", d)
			}
			if !bytes.Equal(got, inOrder) {
				rows, err := unpackRun(got, 4)
				t.Errorf("pack differs from the run packed in order (%d samples, %v)", len(rows), err)
			}
		})
	}
	if _, _, err := mergePack(nil, 5, run[:1]); err == nil {
		t.Error("a sample of another GPU: no error")
	}
}

func mustMerge(t *testing.T, rows []sampleRow) []byte {
	t.Helper()
	data, _, err := mergePack(nil, rows[0].ints[colGPU], rows)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestEachPackedIn: a range read gives the samples in [from, to) only.
func TestEachPackedIn(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	run := steadyRun(rng, 1, 30)
	data := mustMerge(t, run)
	t0 := run[0].ints[colT]
	tests := []struct {
		name     string
		from, to int64
		want     []sampleRow
	}{
		{"all", t0, t0 + samplePackMs, run},
		{"inner", t0 + 10_000, t0 + 30_000, run[1:3]},
		{"from between samples", t0 + 5_000, t0 + 20_001, run[1:3]},
		{"none", t0 + 400_000, t0 + 500_000, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []sampleRow
			err := eachPackedIn(data, 1, tt.from, tt.to, func(r *sampleRow) error {
				got = append(got, *r)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(sampleRow{})); d != "" {
				t.Errorf("samples (-want +got):\n%s", d)
			}
		})
	}
}

// TestPackStoredSamples: samples stored through the writer, put as rows
// into the samples table of a ledger of schema 20 and migrated (0021's
// Go step packs them), read back the same, in packs of the same bytes as
// the writer's; packed one row per GPU and span by hand, they decode to
// the rows, and a stream out of order is refused.
func TestPackStoredSamples(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	util, power := uint32(50), uint32(200_000)
	energy := uint64(9_000_000)
	var samples []record.Sample
	for i := range 90 { // 15 minutes of 10 s on two GPUs
		for g, uuid := range []string{"GPU-00000000-0000-0000-0000-000000000001", "GPU-00000000-0000-0000-0000-000000000002"} {
			u, p, e := util+uint32(i%7), power+uint32(g*1000), energy+uint64(i)*2_000_000
			smp := record.Sample{Time: t0.Add(time.Duration(i) * 10 * time.Second), UUID: uuid, GPUUtil: &u, PowerMW: &p, EnergyMJ: &e,
				Jobs: []record.JobShare{{Job: 7, Share: 1, Idle: i%5 == 0}}}
			if i == 40 {
				smp.Jobs = []record.JobShare{{Job: 7, Share: 0.5}, {Job: 8, Share: 0.5}}
				smp.GPUUtil, smp.Missing = nil, []string{"util: ERROR_UNKNOWN"}
			}
			samples = append(samples, smp)
		}
	}
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		for _, job := range []uint64{7, 8} {
			e := ev(record.JobStart, "n1", t0.Add(-time.Hour), 2)
			e.Job.ID = job
			e.Key = record.EventKey("c", job, 0, "n1", record.JobStart)
			if err := b.Event(e); err != nil {
				return err
			}
		}
		_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 10}, samples)
		return err
	})
	stored := storedRows(t, s)
	old := ledgerAt20(t, stored)
	if d := cmp.Diff(stored, storedRows(t, old), cmp.AllowUnexported(sampleRow{})); d != "" {
		t.Errorf("samples after migration 0021 (-written +migrated):\n%s", d)
	}
	packs := `SELECT * FROM sample_packs ORDER BY gpu_id, t0_ms`
	if d := cmp.Diff(dump(t, s.db, packs), dump(t, old.db, packs)); d != "" {
		t.Errorf("packs (-written +migrated):\n%s", d)
	}
	if n := len(dump(t, old.db, `SELECT name FROM sqlite_master WHERE name = 'samples'`)); n != 0 {
		t.Error("table samples left after migration 0021")
	}
	if len(stored) != len(samples) {
		t.Fatalf("%d rows stored, want %d", len(stored), len(samples))
	}
	type packed struct {
		gid, start int64
		data       []byte
		n          int
	}
	var got []packed
	k := packer{emit: func(gid, start int64, data []byte, n int) error {
		got = append(got, packed{gid, start, append([]byte(nil), data...), n})
		return nil
	}}
	for i := range stored {
		if err := k.add(&stored[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := k.flush(); err != nil {
		t.Fatal(err)
	}
	var back []sampleRow
	var bytesAll int
	for _, p := range got {
		if p.n != 30 || p.start != packStart(p.start) {
			t.Errorf("pack of gpu %d at %d: %d samples, want 30 a span", p.gid, p.start, p.n)
		}
		bytesAll += len(p.data)
		if err := eachPackedIn(p.data, p.gid, p.start, p.start+samplePackMs, func(r *sampleRow) error {
			back = append(back, *r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if len(got) != 6 {
		t.Errorf("%d packs, want 6 (2 GPUs × 3 spans)", len(got))
	}
	if d := cmp.Diff(stored, back, cmp.AllowUnexported(sampleRow{})); d != "" {
		t.Errorf("packed rows read back (-stored +packed):\n%s", d)
	}
	t.Logf("%d samples in %d bytes: %.1f a sample", len(back), bytesAll, float64(bytesAll)/float64(len(back)))
	late := stored[0]
	if err := k.add(&stored[40]); err != nil {
		t.Fatal(err)
	}
	if err := k.add(&late); err == nil {
		t.Error("a sample before the one packed last: no error")
	}
	if err := (&packer{emit: k.emit}).add(&sampleRow{}); err == nil {
		t.Error("a sample without a time: no error")
	}
}

// BenchmarkMergePack is the writer's cost a sample when a GPU's pack
// takes each segment's few samples as they come (3 a segment, as the
// simulated day ships them): the pack is read, merged and written again
// each time.
func BenchmarkMergePack(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	run := steadyRun(rng, 1, 30)
	b.ReportAllocs()
	for b.Loop() {
		var data []byte
		for i := 0; i < len(run); i += 3 {
			var err error
			if data, _, err = mergePack(data, 1, run[i:i+3]); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(run)), "ns/sample")
}

// storedRows are s's samples as the writer fills rows (absent job,
// restart and idle left out), by GPU and time.
func storedRows(t *testing.T, s *Ledger) []sampleRow {
	t.Helper()
	var out []sampleRow
	err := s.StoredSamples(context.Background(), func(vals []any) error {
		var r sampleRow
		for col, v := range vals {
			if x, ok := v.(int64); ok && x == 0 && (col == colJob || col == colRestart || col == colIdle) {
				continue
			}
			switch v := v.(type) {
			case int64:
				r.put(col, v)
			case string:
				r.putText(col, v)
			case nil:
			default:
				t.Fatalf("column %s: %T", sampleColumns()[col], v)
			}
		}
		out = append(out, r)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// ledgerAt20 is a ledger made by migrations 1 to 20 holding rows in its
// samples table, then opened: migration 0021 runs on it.
func ledgerAt20(t *testing.T, rows []sampleRow) *Ledger {
	t.Helper()
	ctx := context.Background()
	path := t.TempDir() + "/old.db"
	db, err := sql.Open("sqlite3", DSN(path, "wal", time.Second, false))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mustMigrations(EngineSQLite)[:20] {
		if _, err := db.ExecContext(ctx, m.sql); err != nil {
			t.Fatalf("migration %s: %v", m.name, err)
		}
	}
	if _, err := db.ExecContext(ctx, `PRAGMA user_version = 20`); err != nil {
		t.Fatal(err)
	}
	cols := sampleColumns()
	for _, r := range rows {
		vals := make([]any, nSampleCols)
		for col := range nSampleCols {
			vals[col] = r.value(col)
		}
		q := `INSERT INTO samples(` + strings.Join(cols[:], ", ") + `) VALUES(?` + strings.Repeat(", ?", nSampleCols-1) + `)`
		if _, err := db.ExecContext(ctx, q, vals...); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	s, err := Open(ctx, Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if v, err := s.Version(ctx); err != nil || v != len(mustMigrations(EngineSQLite)) {
		t.Fatalf("version after open: %d, %v", v, err)
	}
	return s
}

// TestPruneRepacksStraddlingPack: a cut inside a pack deletes the packs
// before it, keeps the samples at and after the cut in that pack, packed
// again as the writer would have packed them alone, and counts what went.
func TestPruneRepacksStraddlingPack(t *testing.T) {
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	util := uint32(40)
	samples := func(from, to int) []record.Sample {
		var out []record.Sample
		for i := from; i < to; i++ {
			u := util + uint32(i%3)
			out = append(out, record.Sample{Time: t0.Add(time.Duration(i) * 10 * time.Second), UUID: "GPU-00000000-0000-0000-0000-000000000001",
				GPUUtil: &u, Jobs: []record.JobShare{{Job: 7, Share: 1}}})
		}
		return out
	}
	write := func(s *Ledger, smp []record.Sample) {
		batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
			e := ev(record.JobStart, "n1", t0.Add(-time.Hour), 1)
			e.Job.ID = 7
			e.Key = record.EventKey("c", 7, 0, "n1", record.JobStart)
			if err := b.Event(e); err != nil {
				return err
			}
			_, err := b.Segment(&record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 10}, smp)
			return err
		})
	}
	tests := []struct {
		name      string
		cut       time.Duration // after t0
		kept, off int           // samples left; the first one left
	}{
		{"inside the second pack", 7*time.Minute + 5*time.Second, 17, 43},
		{"on a pack's start", 5 * time.Minute, 30, 30},
		{"after every sample", time.Hour, 0, 60},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := openTemp(t)
			write(s, samples(0, 60)) // 10 minutes: two packs
			var n int64
			batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
				var err error
				n, err = b.PruneSamples(t0.Add(tt.cut))
				return err
			})
			if n != int64(60-tt.kept) {
				t.Errorf("pruned %d samples, want %d", n, 60-tt.kept)
			}
			fresh := openTemp(t)
			if tt.kept > 0 {
				write(fresh, samples(tt.off, 60))
			}
			packs := `SELECT gpu_id, t0_ms, n, t1_ms, data FROM sample_packs ORDER BY gpu_id, t0_ms`
			if d := cmp.Diff(dump(t, fresh.db, packs), dump(t, s.db, packs)); d != "" {
				t.Errorf("packs after the prune (-written alone +pruned):\n%s", d)
			}
		})
	}
}
