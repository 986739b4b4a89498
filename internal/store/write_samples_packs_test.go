package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// TestPackSamplesStepResumes packs rows in batches smaller than a GPU's
// samples: each batch starts after the last key of the one before, so
// every row is packed once, across GPUs and within one.
func TestPackSamplesStepResumes(t *testing.T) {
	old := packStepBatch
	packStepBatch = 2
	t.Cleanup(func() { packStepBatch = old })
	var vals []string
	var want []string
	for _, gid := range []int64{1, 2, 3} {
		for i := range int64(5) {
			tms := 3600000 + i*1000 + (gid-1)*500
			vals = append(vals, fmt.Sprintf("(%d, %d, 1000, %d)", gid, tms, 50+i))
			want = append(want, fmt.Sprintf("%d@%d=%d", gid, tms, 50+i))
		}
	}
	l := ledgerOf(t,
		`INSERT INTO nodes(id, cluster, name) VALUES (1, 'c1', 'n1')`,
		`INSERT INTO gpus(id, uuid, node_id) VALUES (1, 'GPU-a', 1), (2, 'GPU-b', 1), (3, 'GPU-c', 1)`,
		`INSERT INTO samples(gpu_id, t_ms, interval_ms, util) VALUES `+strings.Join(vals, ", "))
	cols := SampleColumns()
	at := func(name string) int {
		for i, c := range cols {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	gi, ti, ui := at("gpu_id"), at("t_ms"), at("util")
	var got []string
	err := l.StoredSamples(context.Background(), func(v []any) error {
		got = append(got, fmt.Sprintf("%v@%v=%v", v[gi], v[ti], v[ui]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("packed samples:\n got %v\nwant %v", got, want)
	}
}

// TestInsertPacksSegments: a GPU's segments merge into its packs across
// the segments of one batch (the pack the batch wrote last is not read
// back) and of the next (it is), out of order and repeated: each sample
// is stored once, the first time it comes, and each pack counts its
// samples and ends at its last one's end.
func TestInsertPacksSegments(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	const uuid = "GPU-00000000-0000-0000-0000-000000000001"
	at := func(sec int, util uint32) record.Sample {
		return record.Sample{Time: t0.Add(time.Duration(sec) * time.Second), UUID: uuid, GPUUtil: &util}
	}
	h := &record.SegmentHeader{Cluster: "c", Node: "n1", Seq: 1, Interval: 10}
	segment := func(b *Batch, wantNew int, samples ...record.Sample) {
		t.Helper()
		n, err := b.Segment(h, samples)
		if err != nil {
			t.Fatal(err)
		}
		if n != wantNew {
			t.Errorf("segment at %v: %d new samples, want %d", samples[0].Time, n, wantNew)
		}
	}
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		segment(b, 2, at(0, 1), at(10, 2))
		segment(b, 1, at(10, 99), at(20, 3))            // 10 s stored already
		segment(b, 2, at(300, 4), at(5, 5))             // the next pack, then back
		segment(b, 1, at(5, 99), at(30, 6), at(20, 99)) // back in the first pack
		return nil
	})
	batchOf(t, s, t0.Add(time.Hour), func(b *Batch) error {
		segment(b, 1, at(300, 99), at(310, 7))
		segment(b, 0, at(0, 99))
		return nil
	})
	want := []string{"0=1", "5000=5", "10000=2", "20000=3", "30000=6", "300000=4", "310000=7"}
	var got []string
	for _, row := range dumpSamples(t, s, nil) {
		f := strings.Split(row, "|")
		tms, _ := strconv.ParseInt(f[1], 10, 64)
		got = append(got, fmt.Sprintf("%d=%s", tms-t0.UnixMilli(), f[7]))
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("stored samples, ms from t0=util (-want +got):\n%s", d)
	}
	base := t0.UnixMilli()
	wantPacks := []string{fmt.Sprintf("%d|5|%d", base, base+40000), fmt.Sprintf("%d|2|%d", base+300000, base+320000)}
	if d := cmp.Diff(wantPacks, dump(t, s.db, `SELECT t0_ms, n, t1_ms FROM sample_packs ORDER BY t0_ms`)); d != "" {
		t.Errorf("packs: t0|n|t1 (-want +got):\n%s", d)
	}
}
