package report

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// billedLedger holds two jobs of an hour in partition gpu: alice's 2
// GPUs in physics, bob's 1 in chem; weights ("PARTITION:" before them
// names another partition than gpu), when given, are in force from
// before them.
func billedLedger(t *testing.T, weights string) string {
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
	if weights != "" {
		part := "gpu"
		if p, w, ok := strings.Cut(weights, ":"); ok {
			part, weights = p, w
		}
		if err := b.SetBillingWeights("c1", store.BillingSlurm, t0-3600, []store.BillingWeights{{Partition: part, Weights: weights}}); err != nil {
			t.Fatal(err)
		}
	}
	for i, j := range []struct {
		user, acct string
		gpus       int
	}{{"alice", "physics", 2}, {"bob", "chem", 1}} {
		id := uint64(10 + i)
		for _, k := range []record.Kind{record.JobStart, record.JobEnd} {
			at := start
			if k == record.JobEnd {
				at = start.Add(time.Hour)
			}
			ev := &record.Event{Schema: record.EventSchema, Kind: k, Time: at, Cluster: "c1", Node: "n1", Key: record.EventKey("c1", id, 0, "n1", k)}
			ev.Job = record.Job{ID: id, User: j.user, Account: j.acct, Partition: "gpu", Node: "n1", Cluster: "c1"}
			for g := range j.gpus {
				idx := g + i*2
				ev.Job.GPUs = append(ev.Job.GPUs, idx)
				ev.GPUs = append(ev.GPUs, record.GPU{Minor: idx, Index: &idx, UUID: "GPU-n1-" + string(rune('0'+idx)), Model: "NVIDIA H100 80GB HBM3"})
			}
			if err := b.Event(ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return l.Loc()
}

// TestReportBilling: a site without weights sees the columns it saw
// before; with them, a BILLING column after ALLOC; -T billing counts
// billing units instead of GPU-seconds, ordered and shared by them.
func TestReportBilling(t *testing.T) {
	w := HourWindow(timespec.Window{Start: time.Unix(t0, 0).Add(-24 * time.Hour), End: time.Unix(t0, 0).Add(24 * time.Hour)})
	keys := func(tb *table.Table) []string {
		var out []string
		for _, c := range tb.Columns {
			out = append(out, c.Key)
		}
		return out
	}
	rows := func(tb *table.Table) [][]any {
		var out [][]any
		for _, r := range tb.Rows {
			out = append(out, r.Cells)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		weights  string
		tres     string
		wantCols []string
		want     [][]any
	}{
		{"no weights", "", "", []string{"account", "alloc_gpu", "used_gpu", "efficiency_pct", "idle_gpu", "energy_kwh", "jobs", "share_pct"},
			[][]any{{"physics", int64(7200), nil, nil, nil, nil, int64(1), 100 * 7200.0 / 10800}, {"chem", int64(3600), nil, nil, nil, nil, int64(1), 100 * 3600.0 / 10800},
				{"TOTAL", int64(10800), nil, nil, nil, nil, int64(2), 100.0}}},
		{"weights of a partition that ran nothing", "cpu:GRES/gpu=0.5", "", []string{"account", "alloc_gpu", "used_gpu", "efficiency_pct", "idle_gpu", "energy_kwh", "jobs", "share_pct"},
			[][]any{{"physics", int64(7200), nil, nil, nil, nil, int64(1), 100 * 7200.0 / 10800}, {"chem", int64(3600), nil, nil, nil, nil, int64(1), 100 * 3600.0 / 10800},
				{"TOTAL", int64(10800), nil, nil, nil, nil, int64(2), 100.0}}},
		{"weights", "GRES/gpu=0.5", "", []string{"account", "alloc_gpu", "billing", "used_gpu", "efficiency_pct", "idle_gpu", "energy_kwh", "jobs", "share_pct"},
			[][]any{{"physics", int64(7200), 3600.0, nil, nil, nil, nil, int64(1), 100 * 7200.0 / 10800}, {"chem", int64(3600), 1800.0, nil, nil, nil, nil, int64(1), 100 * 3600.0 / 10800},
				{"TOTAL", int64(10800), 5400.0, nil, nil, nil, nil, int64(2), 100.0}}},
		{"-T billing", "GRES/gpu=0.5", TRESBilling, []string{"account", "billing", "jobs", "share_pct"},
			[][]any{{"physics", 3600.0, int64(1), 100 * 3600.0 / 5400}, {"chem", 1800.0, int64(1), 100 * 1800.0 / 5400},
				{"TOTAL", 5400.0, int64(2), 100.0}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := openTest(t, billedLedger(t, tc.weights))
			tb, err := db.Report(context.Background(), Request{Kind: "accounts", Window: w, TRES: tc.tres})
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.wantCols, keys(tb)); d != "" {
				t.Errorf("columns (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tc.want, rows(tb)); d != "" {
				t.Errorf("rows (-want +got):\n%s", d)
			}
		})
	}
	if _, err := openTest(t, billedLedger(t, "")).Report(context.Background(), Request{Kind: "accounts", Window: w, TRES: "cpu"}); !IsBadInput(err) {
		t.Errorf("-T cpu: %v, want bad input", err)
	}
}
