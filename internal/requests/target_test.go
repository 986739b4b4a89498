package requests

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

func intp(i int) *int { return &i }

func TestCheckTarget(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	root := t.TempDir()
	l := ledgerdb.NewLedger(t)
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(ctx, now)
	if err != nil {
		t.Fatal(err)
	}
	n, err := b.Node("c", "gpu01")
	if err != nil {
		t.Fatal(err)
	}
	for i, u := range []string{"GPU-a", "GPU-b", "GPU-c", "GPU-d"} {
		if _, err := b.GPU(u, n, intp(i), nil, "H100"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	live := filepath.Join(root, "live")
	if err := os.Mkdir(live, 0o755); err != nil {
		t.Fatal(err)
	}
	// gpu09 is not in the ledger yet, but its agent writes a snapshot.
	data, err := json.Marshal(record.Live{Schema: record.LiveSchema, Cluster: "c", Node: "gpu09", Time: now, Interval: 10,
		GPUs: []record.LiveGPU{{Index: 0, UUID: "GPU-x"}, {Index: 1, UUID: "GPU-y"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(live, record.LiveFileName("gpu09")), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// gpu04's agent says cluster "demo", which the head's cluster.name
	// (here "cluster", the default) is not.
	data, err = json.Marshal(record.Live{Schema: record.LiveSchema, Cluster: "demo", Node: "gpu04", Time: now, Interval: 10,
		GPUs: []record.LiveGPU{{Index: 0, UUID: "GPU-z"}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(live, record.LiveFileName("gpu04")), data, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, cluster, node string
		gpu                 *int
		noLedger            bool
		err                 string
	}{
		{"ledger node", "c", "gpu01", nil, false, ""},
		{"ledger gpu", "c", "gpu01", intp(3), false, ""},
		{"ledger gpu out of range", "c", "gpu01", intp(4), false, "node gpu01 has 4 GPU(s), 0..3: GPU 4 is not one of them"},
		{"live node", "c", "gpu09", intp(1), false, ""},
		{"live node without a ledger", "c", "gpu09", nil, true, ""},
		{"live gpu out of range", "c", "gpu09", intp(2), false, "node gpu09 has 2 GPU(s), 0..1: GPU 2 is not one of them"},
		{"unknown", "c", "nodeX", nil, false, `no node "nodeX" in the ledger or the live snapshots (gpuacct status lists them)`},
		{"any cluster", "", "gpu04", nil, false, ""},
		{"ledger node of another cluster", "blue", "gpu01", nil, false,
			`node gpu01 is on cluster c, not on "blue", the note's (cluster.name): no board of "blue" shows it; set cluster.name to the agents' cluster`},
		{"live node of another cluster", "cluster", "gpu04", nil, false,
			`node gpu04 is on cluster demo, not on "cluster", the note's (cluster.name): no board of "cluster" shows it; set cluster.name to the agents' cluster`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := st
			if tc.noLedger {
				s = nil
			}
			err := CheckTarget(ctx, s, live, now, tc.cluster, tc.node, tc.gpu)
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || err.Error() != tc.err) {
				t.Fatalf("CheckTarget(%s, %v) = %v, want %q", tc.node, tc.gpu, err, tc.err)
			}
		})
	}
}
