package report

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// slicedLedger holds three jobs of an hour on one node: alice's on a
// whole A100, bob's on a 1g.10gb slice of another, carol's on a 3g.40gb
// slice of it, as the prolog records slices (parent's model, profile).
func slicedLedger(t *testing.T) string {
	t.Helper()
	return slicedLedgerWith(t, nil)
}

// slicedLedgerWith is slicedLedger with more written in its batch by
// more, when set, after the jobs' events.
func slicedLedgerWith(t *testing.T, more func(b *store.Batch, start time.Time)) string {
	t.Helper()
	ctx := context.Background()
	start := time.Unix(t0, 0).UTC()
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(ctx, start.Add(3*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	const model = "NVIDIA A100-SXM4-80GB"
	for i, j := range []struct {
		user, acct, profile string
	}{{"alice", "physics", ""}, {"bob", "chem", "1g.10gb"}, {"carol", "bio", "3g.40gb"}} {
		id := uint64(10 + i)
		minor := min(i, 1)
		g := record.GPU{Minor: minor, Index: &minor, UUID: "GPU-n1-0", Model: model}
		if j.profile != "" {
			gi, ci := i, 0
			g = record.GPU{Minor: minor, Index: &minor, UUID: "MIG-n1-1-" + j.profile, Model: model, Parent: "GPU-n1-1", Profile: j.profile, GI: &gi, CI: &ci}
		}
		for _, k := range []record.Kind{record.JobStart, record.JobEnd} {
			at := start
			if k == record.JobEnd {
				at = start.Add(time.Hour)
			}
			ev := &record.Event{Schema: record.EventSchema, Kind: k, Time: at, Cluster: "c1", Node: "n1", Key: record.EventKey("c1", id, 0, "n1", k)}
			ev.Job = record.Job{ID: id, User: j.user, Account: j.acct, Partition: "gpu", Node: "n1", Cluster: "c1", GPUs: []int{i}}
			ev.GPUs = []record.GPU{g}
			if err := b.Event(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if more != nil {
		more(b, start)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return l.Loc()
}

// TestReportGPUEquivalent: a MIG slice is one GPU in ALLOC, as Slurm's
// gres/gpu counts it, and its share of its GPU in GPU-EQ (1g.10gb: 1/7,
// 3g.40gb: 3/7), a column shown only when the ledger has slices (the
// ledger of TestReportBilling has none, and its columns are unchanged)
// and not in a billing report. The models report tells slices apart.
// Before, slices were counted as whole GPUs of the parent's model.
func TestReportGPUEquivalent(t *testing.T) {
	w := HourWindow(timespec.Window{Start: time.Unix(t0, 0).Add(-24 * time.Hour), End: time.Unix(t0, 0).Add(24 * time.Hour)})
	db := openTest(t, slicedLedger(t))
	const h = 3600.0
	for _, tc := range []struct {
		kind, tres string
		want       [][]any // the first cell, ALLOC and the last (GPU-EQ)
	}{
		{kind: "accounts", want: [][]any{
			{"bio", int64(3600), 3 * h / 7}, {"chem", int64(3600), h / 7}, {"physics", int64(3600), h}, {"TOTAL", int64(10800), h + 4*h/7},
		}},
		{kind: "models", want: [][]any{
			{"NVIDIA A100-SXM4-80GB", int64(3600), h}, {"NVIDIA A100-SXM4-80GB MIG 1g.10gb", int64(3600), h / 7},
			{"NVIDIA A100-SXM4-80GB MIG 3g.40gb", int64(3600), 3 * h / 7}, {"TOTAL", int64(10800), h + 4*h/7},
		}},
		{kind: "accounts", tres: TRESBilling},
	} {
		t.Run(tc.kind+" "+tc.tres, func(t *testing.T) {
			tb, err := db.Report(context.Background(), Request{Kind: tc.kind, Window: w, TRES: tc.tres})
			if err != nil {
				t.Fatal(err)
			}
			last := tb.Columns[len(tb.Columns)-1].Key
			if tc.want == nil {
				if last == gpuEqColumn.Key {
					t.Errorf("%s report shows %s", tc.tres, last)
				}
				return
			}
			if last != gpuEqColumn.Key {
				t.Fatalf("last column %q, want %q", last, gpuEqColumn.Key)
			}
			var got [][]any
			for _, r := range tb.Rows {
				got = append(got, []any{r.Cells[0], r.Cells[1], r.Cells[len(r.Cells)-1]})
			}
			if d := cmp.Diff(tc.want, got, cmp.Comparer(func(a, b float64) bool { return a-b < 1e-6 && b-a < 1e-6 })); d != "" {
				t.Errorf("rows (-want +got):\n%s", d)
			}
		})
	}
}
