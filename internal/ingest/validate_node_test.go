package ingest

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

var t0 = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

// forged is one file to put under <incoming>/<node>/.
type forged struct {
	node, name string
	data       []byte
}

// evFile is an event of job on node, holding the node's GPUs idx.
func evFile(t *testing.T, node string, job uint64, restart int, kind record.Kind, at time.Time, idx ...int) forged {
	t.Helper()
	ev := record.Event{Schema: record.EventSchema, Kind: kind, Time: at, Source: "prolog", Cluster: "c1", Node: node}
	ev.Job.ID, ev.Job.RestartCount, ev.Job.User, ev.Job.Account = job, restart, "alice", "physics"
	for _, i := range idx {
		ev.Job.GPUs = append(ev.Job.GPUs, i)
		ev.GPUs = append(ev.GPUs, gpuIdentity(sim.UUID(node, i), &i))
	}
	ev.Key = record.EventKey("c1", job, restart, node, kind)
	data, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	return forged{node, record.EventFileName("c1", job, restart, node, kind), data}
}

// segFile is segment seq of node with samples at interval seconds.
func segFile(t *testing.T, node string, seq uint64, interval float64, samples []record.Sample) forged {
	t.Helper()
	return segFileWith(t, node, seq, interval, samples, nil)
}

// segFileWith is segFile with its header changed by edit.
func segFileWith(t *testing.T, node string, seq uint64, interval float64, samples []record.Sample, edit func(*record.SegmentHeader)) forged {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	h := record.SegmentHeader{Schema: record.SegmentSchema, Key: record.SegmentKey("c1", node, seq), Cluster: "c1", Node: node,
		Seq: seq, Interval: interval, Start: t0}
	if edit != nil {
		edit(&h)
	}
	if err := enc.Encode(&h); err != nil {
		t.Fatal(err)
	}
	for i := range samples {
		if err := enc.Encode(&samples[i]); err != nil {
			t.Fatal(err)
		}
	}
	return forged{node, record.SegmentFileName("c1", node, seq), buf.Bytes()}
}

// busy is a sample of GPU idx of node at t, 100 % used by job.
func busy(node string, idx int, at time.Time, job uint64) record.Sample {
	util := uint32(100)
	return record.Sample{Time: at, UUID: sim.UUID(node, idx), Index: idx, GPUUtil: &util,
		Jobs: []record.JobShare{{Job: job, Share: 1}}}
}

// every is n samples from `from`, step apart, made by mk.
func every(from time.Time, step time.Duration, n int, mk func(time.Time) record.Sample) []record.Sample {
	var out []record.Sample
	for i := range n {
		out = append(out, mk(from.Add(time.Duration(i)*step)))
	}
	return out
}

func (e *env) put(t *testing.T, files ...forged) {
	t.Helper()
	for _, f := range files {
		p := filepath.Join(e.cfg.Ingest.Incoming, f.node, f.name)
		writeFile(t, p, f.data)
		// Shipped when its records were made, not now.
		if err := os.Chtimes(p, t0, t0); err != nil {
			t.Fatal(err)
		}
	}
}

// quarantinedAfterStarts ingests the starts of job 77 on gpu001 and 88
// on gpu002 at t0, then bad an hour later: bad must be quarantined, with
// a reason that says reason, and nothing of it ingested. It returns the
// ledger for the caller's own checks.
func quarantinedAfterStarts(t *testing.T, bad forged, reason string) *store.Ledger {
	t.Helper()
	e := newEnv(t)
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0), evFile(t, "gpu002", 88, 0, record.JobStart, t0, 0))
	s := e.open(t)
	t.Cleanup(func() { s.Close() })
	e.pass(t, s, t0.Add(time.Minute))
	e.put(t, bad)
	res := e.pass(t, s, t0.Add(time.Hour))
	if res.Quarantined != 1 || res.Files != 0 {
		t.Errorf("pass: %+v, want the forged file quarantined and nothing ingested", res)
	}
	if r := e.reason(t, bad); !strings.Contains(r, reason) {
		t.Errorf("reason %q does not say %q", r, reason)
	}
	return s
}

func (e *env) reason(t *testing.T, f forged) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(e.cfg.Ingest.Quarantine, f.node, f.name+".reason"))
	if err != nil {
		t.Fatalf("%s not quarantined: %v", f.name, err)
	}
	return string(b)
}

func query[T any](t *testing.T, s *store.Ledger, q string, args ...any) T {
	t.Helper()
	return ledgerdb.Scalar[T](t, s.Path, q, args...)
}

// TestNodeSpeaksOnlyForItself: a record under <incoming>/<node>/ that
// speaks of another node's job or GPU, or of values no GPU produces, is
// quarantined with a reason and changes nothing (invariant 8).
func TestNodeSpeaksOnlyForItself(t *testing.T) {
	u64 := func(v uint64) *uint64 { return &v }
	u32 := func(v uint32) *uint32 { return &v }
	tests := []struct {
		name   string
		file   func(t *testing.T) forged
		reason string
	}{
		{"another node's job", func(t *testing.T) forged {
			return segFile(t, "gpu001", 1, 10, every(t0, 10*time.Second, 30, func(at time.Time) record.Sample { return busy("gpu001", 1, at, 88) }))
		}, "job 88 (restart 0) has no start or end event from node gpu001"},
		{"another node's GPU", func(t *testing.T) forged {
			return segFile(t, "gpu001", 1, 10, every(t0, 10*time.Second, 30, func(at time.Time) record.Sample { return busy("gpu002", 0, at, 77) }))
		}, "belongs to node gpu002"},
		{"another node's GPU in an event", func(t *testing.T) forged {
			f := evFile(t, "gpu001", 79, 0, record.JobStart, t0, 0)
			f.data = bytes.ReplaceAll(f.data, []byte(sim.UUID("gpu001", 0)), []byte(sim.UUID("gpu002", 0)))
			return f
		}, "belongs to node gpu002"},
		{"interval past the agent's", func(t *testing.T) forged {
			return segFile(t, "gpu001", 1, 3600, []record.Sample{busy("gpu001", 0, t0.Add(time.Minute), 77)})
		}, "segment interval 3600 s is outside (0, 11]"},
		{"overlapping samples", func(t *testing.T) forged {
			return segFile(t, "gpu001", 1, 10, every(t0, time.Second, 10, func(at time.Time) record.Sample { return busy("gpu001", 0, at, 77) }))
		}, "overlap"},
		{"energy past 2 kW", func(t *testing.T) forged {
			s := every(t0, 10*time.Second, 2, func(at time.Time) record.Sample { return busy("gpu001", 0, at, 77) })
			s[0].EnergyMJ, s[1].EnergyMJ = u64(1_000_000), u64(1_000_000+30_000_000) // 3 kW for 10 s
			return segFile(t, "gpu001", 1, 10, s)
		}, "energy counter rose 30000000 mJ in 10 s"},
		{"energy counter of 2^64-1", func(t *testing.T) forged {
			s := busy("gpu001", 0, t0, 77)
			s.EnergyMJ = u64(math.MaxUint64)
			return segFile(t, "gpu001", 1, 10, []record.Sample{s})
		}, "energy counter 18446744073709551615 out of range"},
		{"power past 2 kW", func(t *testing.T) forged {
			s := busy("gpu001", 0, t0, 77)
			s.PowerMW = u32(5_000_000)
			return segFile(t, "gpu001", 1, 10, []record.Sample{s})
		}, "more than a GPU draws"},
		{"job id past 32 bits", func(t *testing.T) forged {
			return segFile(t, "gpu001", 1, 10, []record.Sample{busy("gpu001", 0, t0, 1<<52)})
		}, "out of range"},
		{"header metric not a catalogue-style name", func(t *testing.T) forged {
			return segFileWith(t, "gpu001", 1, 10, []record.Sample{busy("gpu001", 0, t0, 77)},
				func(h *record.SegmentHeader) { h.Metrics = []string{"power_w'; DROP TABLE jobs"} })
		}, `segment header: metric name "power_w'; DROP TABLE jobs" is not a catalogue-style name`},
		{"unsupported metrics of no GPU", func(t *testing.T) forged {
			return segFileWith(t, "gpu001", 1, 10, []record.Sample{busy("gpu001", 0, t0, 77)},
				func(h *record.SegmentHeader) { h.Unsupported = map[string][]string{"gpu0": {"sm_active_pct: no GPM"}} })
		}, `unsupported metrics of "gpu0", which is not a GPU UUID`},
		{"unsupported metric not a catalogue-style name", func(t *testing.T) forged {
			return segFileWith(t, "gpu001", 1, 10, []record.Sample{busy("gpu001", 0, t0, 77)}, func(h *record.SegmentHeader) {
				h.Unsupported = map[string][]string{sim.UUID("gpu001", 0): {"Bad Name: why"}}
			})
		}, `unsupported metric "Bad Name" is not a catalogue-style name`},
		{"unsupported metric's reason oversized", func(t *testing.T) forged {
			return segFileWith(t, "gpu001", 1, 10, []record.Sample{busy("gpu001", 0, t0, 77)}, func(h *record.SegmentHeader) {
				h.Unsupported = map[string][]string{sim.UUID("gpu001", 0): {"sm_active_pct: " + strings.Repeat("x", 100_000)}}
			})
		}, "segment header unsupported metrics: a note of"},
		{"restart count past 16 bits", func(t *testing.T) forged {
			return evFile(t, "gpu001", 80, 1_000_000, record.JobStart, t0, 1)
		}, "restart count 1000000 out of range"},
		{"end before start", func(t *testing.T) forged {
			return evFile(t, "gpu001", 77, 0, record.JobEnd, t0.Add(-time.Hour), 0)
		}, "ends at 2026-03-01T23:00:00Z, before its start at 2026-03-02T00:00:00Z"},
		{"aggregate idle over sampled", func(t *testing.T) forged {
			a := record.JobGPU{Schema: record.JobGPUSchema, Key: record.JobGPUKey("c1", 77, 0, "gpu001", sim.UUID("gpu001", 0)), Seq: 1,
				Cluster: "c1", Node: "gpu001", Job: 77, UUID: sim.UUID("gpu001", 0), First: t0, Last: t0.Add(10 * time.Minute),
				Samples: 60, SampleSeconds: 600, UtilSeconds: 10, IdleSeconds: 3000}
			data, _ := json.Marshal(&a)
			return forged{"gpu001", record.JobGPUFileName("c1", 77, 0, "gpu001", a.UUID, 1), data}
		}, "idle 3000 s is more than the 600 s sampled"},
		{"aggregate of another node's job", func(t *testing.T) forged {
			a := record.JobGPU{Schema: record.JobGPUSchema, Key: record.JobGPUKey("c1", 88, 0, "gpu001", sim.UUID("gpu001", 1)), Seq: 1,
				Cluster: "c1", Node: "gpu001", Job: 88, UUID: sim.UUID("gpu001", 1), First: t0, Last: t0.Add(10 * time.Minute),
				Samples: 60, SampleSeconds: 600, UtilSeconds: 600}
			data, _ := json.Marshal(&a)
			return forged{"gpu001", record.JobGPUFileName("c1", 88, 0, "gpu001", a.UUID, 1), data}
		}, "job 88 (restart 0) has no start or end event from node gpu001"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := quarantinedAfterStarts(t, tc.file(t), tc.reason)
			if n := query[int](t, s, `SELECT coalesce(sum(n), 0) FROM sample_packs`); n != 0 {
				t.Errorf("%d samples stored from a quarantined file", n)
			}
			if u := query[float64](t, s, `SELECT coalesce(sum(used_gpu_s), 0) + coalesce(sum(idle_gpu_s), 0) FROM jobs`); u != 0 {
				t.Errorf("used + idle %v from a quarantined file", u)
			}
			if n := query[string](t, s, `SELECT n.name FROM gpus g JOIN nodes n ON n.id = g.node_id WHERE g.uuid = ?`, sim.UUID("gpu002", 0)); n != "gpu002" {
				t.Errorf("gpu002's GPU moved to %s", n)
			}
			if n := query[int](t, s, `SELECT count(*) FROM job_nodes WHERE start > end`); n != 0 {
				t.Errorf("%d job parts end before they start", n)
			}
		})
	}
}

// TestUsedWithinAllocation: samples count only the part of their
// interval inside the job's allocation on their node, so used and idle
// never pass allocated, per job and GPU.
func TestUsedWithinAllocation(t *testing.T) {
	tests := []struct {
		name    string
		samples []record.Sample
		used    float64
	}{
		// 13 samples, 10 s each, from 30 s before a one-minute job to 30 s
		// after it: 130 s claimed, 60 s allocated.
		{"before and after the job", every(t0.Add(-30*time.Second), 10*time.Second, 13,
			func(at time.Time) record.Sample { return busy("gpu001", 0, at, 77) }), 60},
		// A late tick: samples 9 s apart at a 10 s interval are trimmed so
		// that none overlaps the next.
		{"samples closer than the interval", every(t0, 9*time.Second, 6,
			func(at time.Time) record.Sample { return busy("gpu001", 0, at, 77) }), 5*9 + 10},
		// Idle samples are held to the allocation the same way.
		{"idle", every(t0.Add(-30*time.Second), 10*time.Second, 13, func(at time.Time) record.Sample {
			s := busy("gpu001", 0, at, 77)
			*s.GPUUtil, s.Jobs[0].Idle = 0, true
			return s
		}), 60},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0), evFile(t, "gpu001", 77, 0, record.JobEnd, t0.Add(time.Minute), 0),
				segFile(t, "gpu001", 1, 10, tc.samples))
			s := e.open(t)
			defer s.Close()
			res := e.pass(t, s, t0.Add(time.Hour))
			if res.Quarantined != 0 || res.Files != 3 {
				t.Fatalf("pass: %+v, want 3 files ingested", res)
			}
			var alloc, used, idle, sampled float64
			ledgerdb.Row(t, s.Path, `SELECT j.alloc_gpu_s, j.used_gpu_s, j.idle_gpu_s, (SELECT sum(sample_s) FROM job_hours WHERE job = j.id) FROM jobs j WHERE job_id = 77`, nil,
				&alloc, &used, &idle, &sampled)
			if alloc != 60 || used+idle != tc.used || sampled != tc.used {
				t.Errorf("allocated %v, used %v, idle %v, sampled %v; want 60 allocated, %v used or idle and sampled", alloc, used, idle, sampled, tc.used)
			}
			if used > alloc || idle > alloc {
				t.Errorf("used %v or idle %v over allocated %v", used, idle, alloc)
			}
		})
	}
}

// TestWaitsForItsJobsEvent: a segment naming a job the node has no event
// of yet stays in incoming for ingest.grace, is ingested once the event
// comes, and is quarantined if it never does.
func TestWaitsForItsJobsEvent(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	seg := segFile(t, "gpu001", 1, 10, every(t0, 10*time.Second, 30, func(at time.Time) record.Sample { return busy("gpu001", 0, at, 77) }))
	e.put(t, seg)
	res := e.pass(t, s, t0.Add(6*time.Minute))
	if res.Deferred != 1 || res.Files != 0 || res.Quarantined != 0 {
		t.Fatalf("pass before the event: %+v, want the segment deferred", res)
	}
	if _, err := os.Stat(filepath.Join(e.cfg.Ingest.Incoming, seg.node, seg.name)); err != nil {
		t.Fatalf("deferred segment not in incoming: %v", err)
	}
	e.put(t, evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0))
	res = e.pass(t, s, t0.Add(7*time.Minute))
	if res.Deferred != 0 || res.Files != 2 {
		t.Fatalf("pass with the event: %+v, want both ingested", res)
	}
	if used := query[float64](t, s, `SELECT used_gpu_s FROM jobs WHERE job_id = 77`); used != 300 {
		t.Errorf("used %v GPU-s, want 300", used)
	}
	// Never an event: quarantined once ingest.grace is over.
	never := segFile(t, "gpu001", 2, 10, every(t0.Add(5*time.Minute), 10*time.Second, 3, func(at time.Time) record.Sample { return busy("gpu001", 1, at, 78) }))
	e.put(t, never)
	res = e.pass(t, s, t0.Add(5*time.Minute).Add(e.cfg.Ingest.Grace.Duration+time.Minute))
	if res.Quarantined != 1 {
		t.Fatalf("pass after the grace: %+v, want the segment quarantined", res)
	}
	if r := e.reason(t, never); !strings.Contains(r, "job 78 (restart 0) has no start or end event from node gpu001 after waiting") {
		t.Errorf("reason %q", r)
	}
}

// TestCountedOnceAfterPrune: files shipped again after the ingested file
// list, the samples and the archive were pruned are duplicates by record
// key: used, idle and energy are not doubled.
func TestCountedOnceAfterPrune(t *testing.T) {
	e := newEnv(t)
	truth, copies := e.generateKept(t, gendata.Options{Cluster: "c1", Nodes: 1, GPUsPerNode: 2, Start: t0,
		Duration: time.Hour, Interval: 10 * time.Second, JobsPerNode: 4, Seed: 3})
	s := e.open(t)
	defer s.Close()
	e.pass(t, s, t0.Add(2*time.Hour))
	checkTruth(t, s, truth)
	before := readTotals(t, s)
	later := t0.Add(e.cfg.Store.SampleRetention.Duration + e.cfg.Ingest.ArchiveRetention.Duration + 30*24*time.Hour)
	e.pass(t, s, later)
	if n := query[int](t, s, `SELECT coalesce(sum(n), 0) FROM sample_packs`) + query[int](t, s, `SELECT count(*) FROM ingested_files`); n != 0 {
		t.Fatalf("%d samples and listed files left after retention", n)
	}
	e.reship(t, copies)
	res := e.pass(t, s, later)
	if res.Duplicates != len(copies) || res.Files != 0 || res.Quarantined != 0 {
		t.Errorf("shipped again: %+v, want %d duplicates", res, len(copies))
	}
	after := readTotals(t, s)
	if !near(after.Used, before.Used) || !near(after.Idle, before.Idle) || !near(after.SampleS, before.SampleS) || after.Energy != before.Energy ||
		!near(after.RollUsed, before.RollUsed) {
		t.Errorf("after shipping again: used/idle/sampled/energy %v/%v/%v/%v, want %v/%v/%v/%v", after.Used, after.Idle, after.SampleS, after.Energy,
			before.Used, before.Idle, before.SampleS, before.Energy)
	}
}

// TestConflictingContent: a second file with a record key already applied
// but other content is quarantined with a reason naming the key.
func TestConflictingContent(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	first := evFile(t, "gpu001", 77, 0, record.JobStart, t0, 0)
	e.put(t, first)
	e.pass(t, s, t0.Add(time.Minute))
	other := first
	other.data = bytes.Replace(first.data, []byte(`"physics"`), []byte(`"chemistry"`), 1)
	e.put(t, other)
	res := e.pass(t, s, t0.Add(2*time.Minute))
	if res.Quarantined != 1 {
		t.Fatalf("pass: %+v, want the conflicting copy quarantined", res)
	}
	if r := e.reason(t, other); !strings.Contains(r, "record event:c1/77/0/gpu001/job_start was ingested before with other content") {
		t.Errorf("reason %q", r)
	}
	if a := query[string](t, s, `SELECT account FROM jobs WHERE job_id = 77`); a != "physics" {
		t.Errorf("account %q, want the first copy's", a)
	}
}

// TestStartEventMissing: a job whose start event never came gets a start
// (from sacct, else its first sample, flagged start_estimated), an end and
// a state; gpuacct job shows it; a missing exit stays NULL unless Slurm
// gives one (reconciled, as sacct's answer has it).
func TestStartEventMissing(t *testing.T) {
	tests := []struct {
		name      string
		sacct     Sacct
		start     time.Time
		estimated bool
		source    string
	}{
		{"no sacct", nil, t0.Add(5 * time.Minute), true, "first_sample"},
		{"sacct answers", func(context.Context, ...string) ([]byte, error) {
			return []byte("77|2026-03-02T00:02:00|2026-03-02T00:30:00|COMPLETED|0:0\n"), nil
		}, t0.Add(2 * time.Minute), false, "sacct"},
		{"sacct does not know", func(context.Context, ...string) ([]byte, error) {
			return []byte("77|Unknown|2026-03-02T00:30:00|CANCELLED by 0|0:0\n"), nil
		},
			t0.Add(5 * time.Minute), true, "first_sample"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open(t)
			end := evFile(t, "gpu001", 77, 0, record.JobEnd, t0.Add(30*time.Minute), 0)
			e.put(t, end, segFile(t, "gpu001", 1, 10, every(t0.Add(5*time.Minute), 10*time.Second, 60,
				func(at time.Time) record.Sample { return busy("gpu001", 0, at, 77) })))
			now := t0.Add(time.Hour)
			res, err := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(),
				Sacct: tc.sacct, SacctLocation: time.UTC}).Pass(context.Background())
			if err != nil || res.Files != 2 {
				t.Fatalf("pass: %+v, %v", res, err)
			}
			var start, jend int64
			var est bool
			var state, source string
			var code *int64
			ledgerdb.Row(t, s.Path, `SELECT j.start, j.end, j.start_estimated, j.state, n.start_source, j.exit_code FROM jobs j JOIN job_nodes n ON n.job = j.id WHERE j.job_id = 77`, nil,
				&start, &jend, &est, &state, &source, &code)
			if start != tc.start.Unix() || est != tc.estimated || source != tc.source || jend != t0.Add(30*time.Minute).Unix() || state == "running" {
				t.Errorf("job: start %s estimated %v from %s, end %s, state %s; want start %s estimated %v from %s, ended",
					time.Unix(start, 0).UTC(), est, source, time.Unix(jend, 0).UTC(), state, tc.start, tc.estimated, tc.source)
			}
			if tc.source == "sacct" {
				if code == nil || *code != 0 {
					t.Errorf("exit code %v, want sacct's 0", code)
				}
			} else if code != nil {
				t.Errorf("exit code %d, want NULL: the end event had none", *code)
			}
			if alloc := query[int64](t, s, `SELECT alloc_gpu_s FROM jobs WHERE job_id = 77`); alloc != t0.Add(30*time.Minute).Unix()-tc.start.Unix() {
				t.Errorf("allocated %d GPU-s, want %d", alloc, t0.Add(30*time.Minute).Unix()-tc.start.Unix())
			}
			if n, err := s.EstimatedStarts(context.Background()); err != nil || (n == 1) != tc.estimated {
				t.Errorf("estimated starts: %d, %v", n, err)
			}
			s.Close()
			db, err := report.OpenDB(context.Background(), e.cfg.Store.Location(), time.Second)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			det, err := db.Job(context.Background(), "", report.JobSpec{ID: 77, Restart: -1}, now)
			if err != nil {
				t.Fatalf("gpuacct job 77: %v", err)
			}
			if det.Job.Start != tc.start.Unix() {
				t.Errorf("gpuacct job 77 starts %d, want %d", det.Job.Start, tc.start.Unix())
			}
		})
	}
}
