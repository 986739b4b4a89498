package ingest

import (
	"fmt"

	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// generateKept generates o's records (one node, gpu001) into incoming and
// keeps a copy of each file, to ship them all again with reship.
func (e *env) generateKept(t *testing.T, o gendata.Options) (gendata.Truth, map[string][]byte) {
	t.Helper()
	truth, err := gendata.Generate(e.cfg.Ingest.Incoming, o)
	if err != nil {
		t.Fatal(err)
	}
	src := filepath.Join(e.cfg.Ingest.Incoming, "gpu001")
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	kept := map[string][]byte{}
	for _, en := range ents {
		if kept[en.Name()], err = os.ReadFile(filepath.Join(src, en.Name())); err != nil {
			t.Fatal(err)
		}
	}
	return truth, kept
}

// reship ships the kept files of gpu001 again, each with tail appended.
func (e *env) reship(t *testing.T, kept map[string][]byte, tail ...byte) {
	t.Helper()
	for n, d := range kept {
		writeFile(t, filepath.Join(e.cfg.Ingest.Incoming, "gpu001", n), append(d[:len(d):len(d)], tail...))
	}
}

func eventJSON(t *testing.T, mutate func(*record.Event)) (string, []byte) {
	t.Helper()
	ev := record.Event{Schema: record.EventSchema, Kind: record.JobStart, Time: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC),
		Source: "prolog", Cluster: "c1", Node: "gpu001"}
	ev.Job.ID, ev.Job.User, ev.Job.Account, ev.Job.GPUs = 77, "alice", "physics", []int{0}
	idx := 0
	ev.GPUs = append(ev.GPUs, gpuIdentity(sim.UUID("gpu001", 0), &idx))
	if mutate != nil {
		mutate(&ev)
	}
	ev.Key = record.EventKey(ev.Cluster, ev.Job.ID, ev.Job.RestartCount, ev.Node, ev.Kind)
	if mutate != nil {
		mutate(&ev) // again, for mutations of the key itself
	}
	data, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	return record.EventFileName("c1", ev.Job.ID, ev.Job.RestartCount, "gpu001", ev.Kind), data
}

// TestBadFiles: each kind of bad file is quarantined with a reason that
// says what is wrong, and the good files beside it are ingested.
func TestBadFiles(t *testing.T) {
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	goodName, good := eventJSON(t, nil)
	tests := []struct {
		name   string
		file   string
		data   []byte
		reason string
	}{
		{"empty", "event.c1.1.0.gpu001.job_start.json", nil, "empty file"},
		{"garbage", "event.c1.2.0.gpu001.job_start.json", []byte("\x00\x01garbage{{{"), "not a JSON record"},
		{"truncated event", "event.c1.3.0.gpu001.job_start.json", good[:len(good)/2], "not a JSON record"},
		{"truncated segment", record.SegmentFileName("c1", "gpu001", 1),
			[]byte(`{"schema":"gpusuite.samples/v1","key":"c1/gpu001/1","cluster":"c1","node":"gpu001","seq":1,"interval_s":10,"start":"2026-03-02T00:00:00Z"}` + "\n" +
				`{"t":"2026-03-02T00:00:00Z","uuid":"` + sim.UUID("gpu001", 0) + `","index":0,"gpu_ut`), "segment line 2"},
		{"segment without final newline", record.SegmentFileName("c1", "gpu001", 2),
			[]byte(`{"schema":"gpusuite.samples/v1","key":"c1/gpu001/2","cluster":"c1","node":"gpu001","seq":2,"interval_s":10,"start":"2026-03-02T00:00:00Z"}` + "\n" +
				`{"t":"2026-03-02T00:00:00Z","uuid":"` + sim.UUID("gpu001", 0) + `","index":0}`), "truncated"},
		{"huge", "event.c1.4.0.gpu001.job_start.json", []byte(strings.Repeat(" ", 5000) + string(good)), "over the limit"},
		{"future schema", "event.c1.5.0.gpu001.job_start.json", []byte(`{"schema":"gpusuite.event/v2","key":"x"}`), "upgrade gpuacct"},
		{"unknown schema", "x.json", []byte(`{"schema":"something/else"}`), "unknown schema"},
		{"unknown field", "event.c1.6.0.gpu001.job_start.json", []byte(strings.Replace(string(good), `"schema"`, `"bogus":1,"schema"`, 1)), "unknown field"},
		{"wrong node", "event.c1.77.0.gpu001.job_start.json", func() []byte {
			_, d := eventJSON(t, func(e *record.Event) { e.Node = "gpu002" })
			return d
		}(), "directory of node"},
		{"key mismatch", goodName, func() []byte {
			_, d := eventJSON(t, func(e *record.Event) { e.Key = "c1/78/0/gpu001/job_start" })
			return d
		}(), "does not match"},
		{"future time", goodName, func() []byte {
			_, d := eventJSON(t, func(e *record.Event) { e.Time = start.Add(48 * time.Hour) })
			return d
		}(), "in the future"},
		{"util over 100", record.SegmentFileName("c1", "gpu001", 3),
			[]byte(`{"schema":"gpusuite.samples/v1","key":"c1/gpu001/3","cluster":"c1","node":"gpu001","seq":3,"interval_s":10,"start":"2026-03-02T00:00:00Z"}` + "\n" +
				`{"t":"2026-03-02T00:00:00Z","uuid":"` + sim.UUID("gpu001", 0) + `","index":0,"gpu_util":101}` + "\n"), "above 100"},
		{"bad user name", goodName, func() []byte {
			_, d := eventJSON(t, func(e *record.Event) { e.Job.User = "a b;rm" })
			return d
		}(), "not a valid name"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.cfg.Ingest.MaxFileSize = 4096
			dir := filepath.Join(e.cfg.Ingest.Incoming, "gpu001")
			writeFile(t, filepath.Join(dir, tc.file), tc.data)
			other := "event.c1.99.0.gpu001.job_start.json"
			if tc.file == other {
				t.Fatal("test file names collide")
			}
			_, okData := eventJSON(t, func(e *record.Event) { e.Job.ID = 99 })
			writeFile(t, filepath.Join(dir, other), okData)
			s := e.open(t)
			defer s.Close()
			res := e.pass(t, s, start.Add(time.Hour))
			if res.Quarantined != 1 || res.Files != 1 {
				t.Fatalf("result %+v, want 1 quarantined and 1 ingested", res)
			}
			reason, err := os.ReadFile(filepath.Join(e.cfg.Ingest.Quarantine, "gpu001", tc.file+".reason"))
			if err != nil {
				t.Fatalf("no reason beside the quarantined file: %v", err)
			}
			if !strings.Contains(string(reason), tc.reason) {
				t.Errorf("reason %q does not say %q", reason, tc.reason)
			}
			if _, err := os.Stat(filepath.Join(e.cfg.Ingest.Quarantine, "gpu001", tc.file)); err != nil {
				t.Errorf("quarantined file: %v", err)
			}
			if _, err := os.Stat(filepath.Join(dir, tc.file)); err == nil {
				t.Errorf("bad file left in incoming")
			}
			if n := ledgerdb.Scalar[int](t, s.Path, `SELECT count(*) FROM jobs WHERE job_id = 99`); n != 1 {
				t.Errorf("good file beside it: %d jobs, want 1", n)
			}
		})
	}
}

func TestDuplicateFiles(t *testing.T) {
	e := newEnv(t)
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	// Keep a copy of everything, to ship it all again.
	truth, copies := e.generateKept(t, gendata.Options{Cluster: "c1", Nodes: 1, GPUsPerNode: 4, Start: start,
		Duration: time.Hour, Interval: 10 * time.Second, JobsPerNode: 8, Seed: 3})
	s := e.open(t)
	defer s.Close()
	e.pass(t, s, start.Add(2*time.Hour))
	checkTruth(t, s, truth)
	e.reship(t, copies)
	res := e.pass(t, s, start.Add(2*time.Hour))
	if res.Duplicates != len(copies) || res.Files != 0 || res.Quarantined != 0 {
		t.Errorf("second delivery: %+v, want %d duplicates", res, len(copies))
	}
	checkTruth(t, s, truth)
	// Same records under a changed file (re-encoded): the same record keys
	// with the same content, so duplicates, stored once.
	e.reship(t, copies, '\n')
	res = e.pass(t, s, start.Add(2*time.Hour))
	if res.Duplicates != len(copies) || res.Files != 0 || res.Quarantined != 0 {
		t.Errorf("third delivery: %+v", res)
	}
	checkTruth(t, s, truth)
}

// TestPlantedFiles: nobody can bill a team by planting a file.
func TestPlantedFiles(t *testing.T) {
	const nobody = 65534
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		plant  func(t *testing.T, dir, file string)
		reason string
	}{
		{"file of another user", func(t *testing.T, dir, file string) {
			if err := os.Chown(file, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 65534"},
		{"world-writable directory", func(t *testing.T, dir, file string) {
			if err := os.Chmod(dir, 0o777); err != nil {
				t.Fatal(err)
			}
		}, "writable by group or others"},
		{"directory of another user", func(t *testing.T, dir, file string) {
			if err := os.Chown(dir, nobody, nobody); err != nil {
				t.Fatal(err)
			}
		}, "owned by uid 65534"},
		{"group-writable file", func(t *testing.T, dir, file string) {
			if err := os.Chmod(file, 0o666); err != nil {
				t.Fatal(err)
			}
		}, "writable by group or others"},
		{"symbolic link", func(t *testing.T, dir, file string) {
			elsewhere := filepath.Join(filepath.Dir(dir), "elsewhere.json")
			if err := os.Rename(file, elsewhere); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink(elsewhere, file); err != nil {
				t.Fatal(err)
			}
		}, "symbolic link"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			dir := filepath.Join(e.cfg.Ingest.Incoming, "gpu001")
			name, data := eventJSON(t, nil)
			file := filepath.Join(dir, name)
			writeFile(t, file, data)
			tc.plant(t, dir, file)
			s := e.open(t)
			defer s.Close()
			res := e.pass(t, s, start.Add(time.Hour))
			if res.Refused != 1 || res.Files != 0 {
				t.Fatalf("result %+v, want 1 refused, nothing ingested", res)
			}
			if n := ledgerdb.Scalar[int](t, s.Path, `SELECT count(*) FROM jobs`); n != 0 {
				t.Errorf("planted record stored: %d jobs", n)
			}
			reason, err := os.ReadFile(filepath.Join(e.cfg.Ingest.Quarantine, "gpu001", name+".reason"))
			if err != nil {
				t.Fatalf("refused file not reported in quarantine: %v", err)
			}
			if !strings.Contains(string(reason), "refused") || !strings.Contains(string(reason), tc.reason) {
				t.Errorf("reason %q does not say refused, %q", reason, tc.reason)
			}
		})
	}
}

// TestSQLiteDiskFull fills the SQLite file's disk (Options.MaxPages)
// mid-pass.
func TestSQLiteDiskFull(t *testing.T) {
	e := newEnv(t)
	e.cfg.Store.URL = "" // the SQLite file, whatever the engine under test
	e.cfg.Ingest.BatchRecords = 500
	e.cfg.Ingest.Keep = "delete"
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	truth, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 2, GPUsPerNode: 8, Start: start,
		Duration: 2 * time.Hour, Interval: 10 * time.Second, JobsPerNode: 10, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	e.open(t).Close() // a new, empty ledger
	pages := ledgerdb.Scalar[int64](t, e.cfg.Store.Path, `PRAGMA page_count`)
	ctx := context.Background()
	// A disk with room for 10 more pages (the two hours' samples take
	// about 20 packed).
	s, err := store.Open(ctx, store.Options{Path: e.cfg.Store.Path, MaxPages: pages + 10})
	if err != nil {
		t.Fatal(err)
	}
	now := start.Add(3 * time.Hour)
	in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid()})
	res, err := in.Pass(ctx)
	if err == nil || !strings.Contains(err.Error(), "full") {
		t.Fatalf("pass on a full disk: %v (result %+v), want a disk-full error", err, res)
	}
	if strings.Contains(err.Error(), "\n") {
		t.Errorf("error is not one line: %q", err)
	}
	if res.Files == 0 {
		t.Errorf("nothing committed before the disk filled: %+v", res)
	}
	left, _ := os.ReadDir(filepath.Join(e.cfg.Ingest.Incoming, "gpu001"))
	if len(left) == 0 {
		t.Fatal("all files gone although the pass failed")
	}
	q, _ := os.ReadDir(e.cfg.Ingest.Quarantine)
	if len(q) != 0 {
		t.Errorf("a disk-full error quarantined files")
	}
	s.Close()
	// Space returns.
	s = e.open(t)
	defer s.Close()
	in = New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid()})
	if _, err := in.Pass(ctx); err != nil {
		t.Fatalf("pass after space returned: %v", err)
	}
	checkTruth(t, s, truth)
}

func itoa(n int) string { return fmt.Sprint(n) }

func gpuIdentity(uuid string, idx *int) record.GPU {
	e := uint64(5_000_000)
	return record.GPU{Minor: *idx, Index: idx, UUID: uuid, Model: "NVIDIA H100 80GB HBM3", EnergyMJ: &e}
}
