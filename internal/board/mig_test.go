package board

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// slice is a MIG instance of GPU index as the agent's snapshot lists it.
func slice(index int, uuid, profile string, util uint32, jobs ...uint64) record.LiveGPU {
	g := gpu(util, jobs...)
	g.Index, g.UUID, g.Model = index, uuid, "NVIDIA A100-SXM4-80GB MIG "+profile
	return g
}

// migNode is n1: GPU 0 whole and free, GPU 1 cut into a 3g.40gb held
// by job 5 and two free 1g.10gb.
func migNode() record.Live {
	l := fresh("n1", record.LiveGPU{UUID: "GPU-0", Util: u32(0)}, record.LiveGPU{UUID: "GPU-1", Model: "NVIDIA A100-SXM4-80GB"})
	l.GPUs = append(l.GPUs, slice(1, "MIG-a", "3g.40gb", 90, 5), slice(1, "MIG-b", "1g.10gb", 0), slice(1, "MIG-c", "1g.10gb", 0))
	return l
}

// TestBuildMIG: a GPU's MIG instances are nested in its cell with their
// profiles and states; the GPU shows what its slices do and is not
// counted free whole; the free slices are counted per profile; Slurm's
// count of held gres (one per slice) caps the free slices.
func TestBuildMIG(t *testing.T) {
	type sliceOf struct {
		UUID, Profile string
		State         State
	}
	tests := []struct {
		name       string
		used       int // Slurm's GPUsUsed of the node's 4 gres (1 GPU + 3 slices)
		wantStates []State
		wantSlices []sliceOf
		wantFree   []SliceCount
		wantWhole  int
	}{
		{name: "as the agent sees it", used: 1, wantStates: []State{Free, Busy},
			wantSlices: []sliceOf{{"MIG-a", "3g.40gb", Busy}, {"MIG-b", "1g.10gb", Free}, {"MIG-c", "1g.10gb", Free}},
			wantFree: []SliceCount{{Model: "NVIDIA A100-SXM4-80GB", Profile: "1g.10gb", Partition: "gpu", Free: 2,
				Nodes: []NodeCount{{Node: "n1", Count: 2}}}},
			wantWhole: 1},
		{name: "Slurm has given away a slice the agent has not seen", used: 3, wantStates: []State{Free, Busy},
			wantSlices: []sliceOf{{"MIG-a", "3g.40gb", Busy}, {"MIG-b", "1g.10gb", Busy}, {"MIG-c", "1g.10gb", Busy}},
			wantWhole:  1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sn := snode("n1", slurmstate.Mixed, 4)
			sn.GPUsUsed = tc.used
			b := Build([]record.Live{migNode()}, slurm([]slurmstate.Node{sn}), nil, now)
			n := b.Nodes[0]
			var states []State
			var got []sliceOf
			for _, g := range n.GPUs {
				states = append(states, g.State)
				for _, s := range g.Slices {
					got = append(got, sliceOf{s.UUID, s.Profile, s.State})
				}
			}
			if diff := cmp.Diff(tc.wantStates, states); diff != "" {
				t.Errorf("GPU states (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantSlices, got); diff != "" {
				t.Errorf("slices (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFree, b.Totals.FreeSlices); diff != "" {
				t.Errorf("free slices (-want +got):\n%s", diff)
			}
			if b.Totals.FreeGPUs != tc.wantWhole {
				t.Errorf("free GPUs %d, want %d", b.Totals.FreeGPUs, tc.wantWhole)
			}
			if b.Totals.RunningJobs != 1 {
				t.Errorf("running jobs %d, want 1 (the slice's)", b.Totals.RunningJobs)
			}
		})
	}
}

// TestStatusDocMIG: the status document nests the slices in their GPU
// and counts the free ones; a board without slices says neither.
func TestStatusDocMIG(t *testing.T) {
	b := Build([]record.Live{migNode()}, nil, nil, now)
	v := NewView(&b, Meta{}, false, "")
	doc := v.Status(b.Nodes)
	g := doc.Nodes[0].GPUs[1]
	if len(g.Slices) != 3 || g.Slices[0].Profile != "3g.40gb" || len(g.Slices[0].Jobs) != 1 || g.Slices[0].Jobs[0].Job != 5 {
		t.Errorf("GPU 1's slices: %+v", g.Slices)
	}
	if len(doc.Totals.FreeSlices) != 1 || doc.Totals.FreeSlices[0].Free != 2 {
		t.Errorf("free slices: %+v", doc.Totals.FreeSlices)
	}
	plain := Build([]record.Live{fresh("n1", gpu(0))}, nil, nil, now)
	pd := NewView(&plain, Meta{}, false, "").Status(plain.Nodes)
	if pd.Totals.FreeSlices != nil || pd.Nodes[0].GPUs[0].Slices != nil {
		t.Errorf("a board without slices has %+v, %+v", pd.Totals.FreeSlices, pd.Nodes[0].GPUs[0].Slices)
	}
}

// TestBuildMIGAlone: a MIG instance whose GPU the snapshot does not list
// is a cell of its own, as before slices: a note on its index books it.
func TestBuildMIGAlone(t *testing.T) {
	l := fresh("n1", record.LiveGPU{UUID: "GPU-0", Util: u32(0)})
	l.GPUs = append(l.GPUs, slice(1, "MIG-a", "1g.10gb", 0))
	one := 1
	b := Build([]record.Live{l}, nil, []Note{{ID: 1, Node: "n1", GPU: &one, Text: "bench"}}, now)
	gs := b.Nodes[0].GPUs
	if len(gs) != 2 || gs[1].UUID != "MIG-a" || gs[1].Slices != nil {
		t.Fatalf("GPUs %+v, want GPU-0 and MIG-a as a cell of its own", gs)
	}
	if gs[1].State != Booked || len(gs[1].Notes) != 1 || gs[1].Notes[0].ID != 1 {
		t.Errorf("MIG-a: %s with notes %+v, want booked by note 1", gs[1].State, gs[1].Notes)
	}
}
