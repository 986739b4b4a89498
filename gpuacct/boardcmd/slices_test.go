package boardcmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// TestMIGSlices: a node whose Slurm gres are MIG profiles (typed gres
// 1g.10gb and 3g.40gb beside whole GPUs) has its free slices counted per
// profile by free ("3 × 1g.10gb free on gpu05") and listed by status
// (text and json); a drained one's are not free, a reserved one's are
// reserved. Before, free and status said nothing of slices.
func TestMIGSlices(t *testing.T) {
	dir, base, notes := demoLike(t)
	mig := func(name string, cond slurmstate.Condition) slurmstate.Node {
		return slurmstate.Node{Name: name, Condition: cond, Partitions: []string{"gpu"}, GPUCount: 6, GPUsUsed: 2,
			GPUs: []slurmstate.GPU{{Type: "a100", Count: 1, Used: 0}, {Type: "3g.40gb", Count: 1, Used: 1}, {Type: "1g.10gb", Count: 4, Used: 1}}}
	}
	for _, tc := range []struct {
		name string
		node slurmstate.Node
		resv bool
		free []string // lines in free's output
		// status is status's line for gpu05; want its json's slices
		status string
		want   []SliceCount
	}{
		{name: "schedulable", node: mig("gpu05", slurmstate.Mixed),
			free:   []string{"3 × 1g.10gb free on gpu05\n"},
			status: "gpu05: MIG slices 1g.10gb 1 used of 4, 3 free; 3g.40gb 1 used of 1, 0 free",
			want: []SliceCount{
				{Node: "gpu05", Profile: "1g.10gb", GPUEquivalent: 1.0 / 7, Total: 4, Used: 1, Free: 3},
				{Node: "gpu05", Profile: "3g.40gb", GPUEquivalent: 3.0 / 7, Total: 1, Used: 1},
			}},
		{name: "drained", node: mig("gpu05", slurmstate.Drained),
			free:   []string{"no MIG slice free\n"},
			status: "gpu05: MIG slices 1g.10gb 1 used of 4, 0 free; 3g.40gb 1 used of 1, 0 free",
			want: []SliceCount{
				{Node: "gpu05", Profile: "1g.10gb", GPUEquivalent: 1.0 / 7, Total: 4, Used: 1},
				{Node: "gpu05", Profile: "3g.40gb", GPUEquivalent: 3.0 / 7, Total: 1, Used: 1},
			}},
		{name: "reserved", node: mig("gpu05", slurmstate.Idle), resv: true,
			free:   []string{"3 × 1g.10gb reserved on gpu05\n", "no MIG slice free\n"},
			status: "gpu05: MIG slices 1g.10gb 1 used of 4, 0 free; 3g.40gb 1 used of 1, 0 free",
			want: []SliceCount{
				{Node: "gpu05", Profile: "1g.10gb", GPUEquivalent: 1.0 / 7, Total: 4, Used: 1, Reserved: 3},
				{Node: "gpu05", Profile: "3g.40gb", GPUEquivalent: 3.0 / 7, Total: 1, Used: 1},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			slurm := base
			slurm.Nodes = append(append([]slurmstate.Node(nil), base.Nodes...), tc.node)
			if tc.resv {
				slurm.Reservations = append(append([]slurmstate.Reservation(nil), base.Reservations...),
					slurmstate.Reservation{Name: "exam", Start: now.Add(-time.Hour), End: now.Add(time.Hour), Nodes: []string{"gpu05"}})
			}
			read := func(context.Context, time.Duration) (slurmstate.State, error) { return slurm, nil }
			run := func(args ...string) string {
				t.Helper()
				code, out, errs := runConf(t, "[cluster]\nname = \"c1\"\n", read, notes, append([]string{args[0], "--live-dir", dir}, args[1:]...)...)
				if code != 0 {
					t.Fatalf("%v: exit %d\n%s", args, code, errs)
				}
				return out
			}
			out := run("free")
			for _, w := range tc.free {
				if !strings.Contains(out, w) {
					t.Errorf("free: want %q in:\n%s", w, out)
				}
			}
			if strings.Contains(out, "3g.40gb free") {
				t.Errorf("free: the held 3g.40gb is counted free:\n%s", out)
			}
			if out := run("status", "gpu05", "gpu01"); !strings.Contains(out, tc.status+"\n") {
				t.Errorf("status: want %q in:\n%s", tc.status, out)
			}
			for _, cmd := range []string{"free", "status"} {
				var doc struct {
					MIGSlices []SliceCount `json:"mig_slices"`
				}
				if err := json.Unmarshal([]byte(run(cmd, "--format", "json")), &doc); err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(tc.want, doc.MIGSlices); d != "" {
					t.Errorf("%s --format json: mig_slices (-want +got):\n%s", cmd, d)
				}
			}
			// a node asked for without slices lists none
			if out := run("status", "gpu01"); strings.Contains(out, "MIG") {
				t.Errorf("status gpu01: slices of another node:\n%s", out)
			}
		})
	}
}

// TestNoMIGSlices: without MIG gres, free's and status's json have no
// mig_slices member at all (the goldens hold the rest of the bytes).
func TestNoMIGSlices(t *testing.T) {
	dir, slurm, notes := demoLike(t)
	read := func(context.Context, time.Duration) (slurmstate.State, error) { return slurm, nil }
	for _, cmd := range []string{"free", "status"} {
		code, out, errs := runConf(t, "[cluster]\nname = \"c1\"\n", read, notes, cmd, "--format", "json", "--live-dir", dir)
		if code != 0 || strings.Contains(out, "mig_slices") || strings.Contains(out, "MIG") {
			t.Errorf("%s: exit %d, stderr %q, stdout:\n%s", cmd, code, errs, out)
		}
	}
}
