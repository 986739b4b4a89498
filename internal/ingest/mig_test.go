package ingest

import (
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// migBusy is a sample of MIG instance i of GPU idx of parentNode, used
// by job, with its share of the parent's energy.
func migBusy(parentNode string, idx, i int, at time.Time, job uint64) record.Sample {
	mem, share := uint64(4096), 3.0/7
	parent := sim.UUID(parentNode, idx)
	return record.Sample{Time: at, UUID: sim.MIGUUID(parent, i), Index: idx, SampleMIG: &record.SampleMIG{Parent: parent, ParentShare: share},
		MemUsedMiB: &mem, Jobs: []record.JobShare{{Job: job, Share: 1}}}
}

// A MIG instance is quarantined unless it is on one of its own node's
// GPUs (invariant 8), and its sample must have a MIG instance's shape.
func TestMIGInstanceOnlyOnItsNodesGPUs(t *testing.T) {
	share := 1.5
	tests := []struct {
		name   string
		file   func(t *testing.T) forged
		reason string
	}{
		{"instance of another node's GPU", func(t *testing.T) forged {
			return segFile(t, "gpu001", 1, 10, []record.Sample{migBusy("gpu002", 0, 0, t0, 77)})
		}, "belongs to node gpu002"},
		{"instance of another node's GPU sampled too", func(t *testing.T) forged {
			return segFile(t, "gpu001", 1, 10, []record.Sample{busy("gpu002", 0, t0, 77), migBusy("gpu002", 0, 0, t0, 77)})
		}, "belongs to node gpu002"},
		{"instance of a GPU no node reported", func(t *testing.T) forged {
			return segFile(t, "gpu001", 1, 10, []record.Sample{migBusy("gpu009", 0, 0, t0, 77)})
		}, "which node gpu001 has not reported"},
		{"MIG UUID with no parent", func(t *testing.T) forged {
			s := migBusy("gpu001", 0, 0, t0, 77)
			s.SampleMIG = nil
			return segFile(t, "gpu001", 1, 10, []record.Sample{s})
		}, "names no parent GPU"},
		{"whole GPU with a parent", func(t *testing.T) forged {
			s := busy("gpu001", 0, t0, 77)
			s.SampleMIG = &record.SampleMIG{Parent: sim.UUID("gpu001", 1)}
			return segFile(t, "gpu001", 1, 10, []record.Sample{s})
		}, "is not a MIG instance but names parent"},
		{"share of the parent over 1", func(t *testing.T) forged {
			s := migBusy("gpu001", 0, 0, t0, 77)
			s.SampleMIG.ParentShare = share
			return segFile(t, "gpu001", 1, 10, []record.Sample{s})
		}, "parent share 1.5 is outside [0, 1]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := quarantinedAfterStarts(t, tc.file(t), tc.reason)
			if n := query[int](t, s, `SELECT coalesce(sum(n), 0) FROM sample_packs`); n != 0 {
				t.Errorf("%d samples stored from a quarantined file", n)
			}
		})
	}
}

// An instance of the node's own GPU is taken, sampled beside its parent
// or alone once the ledger knows the parent as the node's.
func TestMIGInstanceOfOwnGPUIngested(t *testing.T) {
	e := newEnv(t)
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0))
	s := e.open(t)
	t.Cleanup(func() { s.Close() })
	e.pass(t, s, t0.Add(time.Minute))
	parent := record.Sample{Time: t0, UUID: sim.UUID("gpu001", 1), Index: 1}
	e.put(t, segFile(t, "gpu001", 1, 10, []record.Sample{parent, migBusy("gpu001", 1, 0, t0, 77)}),
		segFile(t, "gpu001", 2, 10, []record.Sample{migBusy("gpu001", 0, 2, t0.Add(10*time.Second), 77)}))
	res := e.pass(t, s, t0.Add(time.Hour))
	if res.Quarantined != 0 || res.Files != 2 {
		t.Errorf("pass: %+v, want both segments ingested", res)
	}
	if n := query[int](t, s, `SELECT count(*) FROM gpus WHERE uuid LIKE 'MIG-%'`); n != 2 {
		t.Errorf("%d MIG instances in the ledger, want 2", n)
	}
}

// An instance whose GPU the node has not reported yet (a profile segment
// before the node's first) waits, and is taken once the GPU is.
func TestMIGInstanceWaitsForItsGPU(t *testing.T) {
	e := newEnv(t)
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0))
	s := e.open(t)
	t.Cleanup(func() { s.Close() })
	e.pass(t, s, t0.Add(time.Minute))
	e.put(t, segFile(t, "gpu001", 2, 10, []record.Sample{migBusy("gpu001", 1, 0, t0.Add(10*time.Second), 77)}))
	if res := e.pass(t, s, t0.Add(2*time.Minute)); res.Deferred != 1 || res.Quarantined != 0 {
		t.Errorf("pass: %+v, want the segment deferred", res)
	}
	e.put(t, segFile(t, "gpu001", 1, 10, []record.Sample{{Time: t0, UUID: sim.UUID("gpu001", 1), Index: 1}}))
	if res := e.pass(t, s, t0.Add(3*time.Minute)); res.Quarantined != 0 || res.Files != 2 {
		t.Errorf("pass: %+v, want both segments ingested", res)
	}
}
