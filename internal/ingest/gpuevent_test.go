package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// gpuEvFile is a GPU event of GPU idx of node at `at`.
func gpuEvFile(t *testing.T, node string, idx int, at time.Time, kind record.GPUEventKind, code uint64, reason string, jobs ...record.JobRef) forged {
	t.Helper()
	u := sim.UUID(node, idx)
	ev := record.GPUEvent{Schema: record.GPUEventSchema, Key: record.GPUEventKey("c1", node, u, at, kind, code, reason), Kind: kind,
		Time: at, Cluster: "c1", Node: node, UUID: u, Index: idx, Code: code, Reason: reason, Jobs: jobs}
	data, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	return forged{node, record.GPUEventFileName("c1", node, u, at, kind, code, reason), data}
}

// TestGPUEventsIngested: GPU events are stored once (a file shipped again
// changes nothing), counted by kind on /metrics, and read back as a job's
// events.
func TestGPUEventsIngested(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, time.Now)
	pass := func(now time.Time) Result {
		t.Helper()
		res, err := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), Metrics: m}).Pass(context.Background())
		if err != nil {
			t.Fatalf("pass: %v", err)
		}
		return res
	}
	ref := record.JobRef{Job: 77}
	files := []forged{
		evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0),
		gpuEvFile(t, "gpu001", 0, t0.Add(time.Minute), record.GPUThrottleStart, 0, record.ThrottlePower, ref),
		gpuEvFile(t, "gpu001", 0, t0.Add(2*time.Minute), record.GPUThrottleEnd, 0, record.ThrottlePower, ref),
		gpuEvFile(t, "gpu001", 0, t0.Add(3*time.Minute), record.GPUXid, 79, "", ref),
		gpuEvFile(t, "gpu001", 0, t0.Add(3*time.Minute+time.Second), record.GPUECCDouble, 0, "", ref),
	}
	e.put(t, files...)
	res := pass(t0.Add(time.Hour))
	if res.Quarantined != 0 || res.Files != len(files) {
		t.Fatalf("pass: %+v, want %d files ingested and none quarantined", res, len(files))
	}
	if n := query[int](t, s, `SELECT count(*) FROM gpu_events`); n != 4 {
		t.Errorf("%d GPU events stored, want 4", n)
	}
	if n := query[int](t, s, `SELECT code FROM gpu_events WHERE kind = 'xid'`); n != 79 {
		t.Errorf("Xid %d stored, want 79", n)
	}
	for kind, want := range map[string]float64{"xid": 1, "throttle_start": 1, "throttle_end": 1, "ecc_double": 1} {
		if got := testutil.ToFloat64(m.gpuEvents.WithLabelValues(kind)); got != want {
			t.Errorf("gpuacct_ingest_gpu_events_total{kind=%q} = %v, want %v", kind, got, want)
		}
	}
	// Shipped again: a duplicate, applied nowhere.
	e.put(t, files[3])
	if res := pass(t0.Add(2 * time.Hour)); res.Duplicates != 1 || res.Files != 0 {
		t.Errorf("second pass: %+v, want one duplicate", res)
	}
	if n := query[int](t, s, `SELECT count(*) FROM gpu_events`); n != 4 {
		t.Errorf("%d GPU events after a duplicate, want 4", n)
	}
}

// TestGPUEventRefused: a GPU event that speaks of another node or its
// GPU, or that its name, key or figures contradict, is quarantined with a
// reason and stores nothing.
func TestGPUEventRefused(t *testing.T) {
	at := t0.Add(time.Minute)
	tests := []struct {
		name   string
		file   func(t *testing.T) forged
		reason string
	}{
		{"another node's event", func(t *testing.T) forged {
			f := gpuEvFile(t, "gpu002", 0, at, record.GPUXid, 79, "")
			f.node = "gpu001"
			return f
		}, `gpu event of node "gpu002" found in the directory of node "gpu001"`},
		{"another node's GPU", func(t *testing.T) forged {
			f := gpuEvFile(t, "gpu001", 0, at, record.GPUXid, 79, "")
			u := sim.UUID("gpu002", 0)
			var ev record.GPUEvent
			if err := json.Unmarshal(f.data, &ev); err != nil {
				t.Fatal(err)
			}
			ev.UUID = u
			ev.Key = record.GPUEventKey("c1", "gpu001", u, at, record.GPUXid, 79, "")
			f.data, _ = json.Marshal(&ev)
			f.name = record.GPUEventFileName("c1", "gpu001", u, at, record.GPUXid, 79, "")
			return f
		}, "belongs to node gpu002"},
		{"key not its content", func(t *testing.T) forged {
			f := gpuEvFile(t, "gpu001", 0, at, record.GPUXid, 79, "")
			f.data = bytes.Replace(f.data, []byte(`/xid/79"`), []byte(`/xid/80"`), 1)
			return f
		}, "gpu event key"},
		{"name not its key", func(t *testing.T) forged {
			f := gpuEvFile(t, "gpu001", 0, at, record.GPUXid, 79, "")
			f.name = strings.Replace(f.name, ".xid.79.", ".xid.80.", 1)
			return f
		}, "gpu event file name"},
		{"in the future", func(t *testing.T) forged {
			return gpuEvFile(t, "gpu001", 0, t0.Add(48*time.Hour), record.GPUXid, 79, "")
		}, "is in the future"},
		{"unknown kind", func(t *testing.T) forged {
			return gpuEvFile(t, "gpu001", 0, at, "meltdown", 1, "")
		}, `kind "meltdown"`},
		{"Xid 0", func(t *testing.T) forged {
			return gpuEvFile(t, "gpu001", 0, at, record.GPUXid, 0, "")
		}, "Xid 0 out of range"},
		{"throttling without a reason", func(t *testing.T) forged {
			return gpuEvFile(t, "gpu001", 0, at, record.GPUThrottleStart, 0, "")
		}, "throttle reason"},
		{"throttling with a code", func(t *testing.T) forged {
			return gpuEvFile(t, "gpu001", 0, at, record.GPUThrottleStart, 3, record.ThrottlePower)
		}, "throttling has none"},
		{"Xid with a reason", func(t *testing.T) forged {
			return gpuEvFile(t, "gpu001", 0, at, record.GPUXid, 79, "power")
		}, "only throttling has one"},
		{"job past 32 bits", func(t *testing.T) forged {
			return gpuEvFile(t, "gpu001", 0, at, record.GPUXid, 79, "", record.JobRef{Job: 1 << 40})
		}, "out of range"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := quarantinedAfterStarts(t, tc.file(t), tc.reason)
			if n := query[int](t, s, `SELECT count(*) FROM gpu_events`); n != 0 {
				t.Errorf("%d GPU events stored from a quarantined file", n)
			}
			if n := query[string](t, s, `SELECT n.name FROM gpus g JOIN nodes n ON n.id = g.node_id WHERE g.uuid = ?`, sim.UUID("gpu002", 0)); n != "gpu002" {
				t.Errorf("gpu002's GPU moved to %s", n)
			}
		})
	}
}
