package store

import (
	"context"
	"fmt"
	"strings"
	"testing"
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
