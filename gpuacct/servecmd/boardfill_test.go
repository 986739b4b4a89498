package servecmd

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
)

// TestServeRestartFillsStrips: a job's ten minutes ingested by one serve
// show in the board's last-hour strip of the next serve on that ledger,
// before any agent snapshot could have filled it.
func TestServeRestartFillsStrips(t *testing.T) {
	l := ledgerdb.Ledger{Path: filepath.Join(t.TempDir(), "gpuacct.db")}
	cfg := serveConfig(t, l)
	const node, uuid, job = "gpu001", "GPU-0f111111-2222-3333-4444-555555555555", 4242
	now := time.Now().UTC().Truncate(time.Second)
	start := now.Add(-20 * time.Minute)
	idx := 0
	e := uint64(5_000_000)
	ev := record.Event{Schema: record.EventSchema, Kind: record.JobStart, Time: start, Source: "prolog", Cluster: cfg.Cluster.Name, Node: node}
	ev.Job.ID, ev.Job.User, ev.Job.Account, ev.Job.GPUs = job, "alice", "physics", []int{0}
	ev.GPUs = []record.GPU{{Minor: 0, Index: &idx, UUID: uuid, Model: "NVIDIA H100 80GB HBM3", EnergyMJ: &e}}
	ev.Key = record.EventKey(cfg.Cluster.Name, job, 0, node, record.JobStart)
	evData, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	// Ten minutes at 100 %, sampled every 10 s, ending five minutes ago.
	var seg bytes.Buffer
	enc := json.NewEncoder(&seg)
	from := now.Add(-15 * time.Minute)
	h := record.SegmentHeader{Schema: record.SegmentSchema, Key: record.SegmentKey(cfg.Cluster.Name, node, 1), Cluster: cfg.Cluster.Name,
		Node: node, Seq: 1, Interval: 10, Start: from}
	if err := enc.Encode(&h); err != nil {
		t.Fatal(err)
	}
	for i := range 60 {
		util := uint32(100)
		s := record.Sample{Time: from.Add(time.Duration(i) * 10 * time.Second), UUID: uuid, Index: 0, GPUUtil: &util,
			Jobs: []record.JobShare{{Job: job, Share: 1}}}
		if err := enc.Encode(&s); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(cfg.Ingest.Incoming, node)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{
		record.EventFileName(cfg.Cluster.Name, job, 0, node, record.JobStart): evData,
		record.SegmentFileName(cfg.Cluster.Name, node, 1):                     seg.Bytes(),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// The first serve ingests them, then stops.
	var log1 logs.Buffer
	m1 := &Main{Stderr: &log1, Getenv: func(string) string { return "" }, Config: cfg, Addr: make(chan string, 1)}
	ctx1, cancel1 := context.WithCancel(context.Background())
	defer cancel1()
	_, done1 := startServe(ctx1, t, m1, &log1)
	waitFor(t, "the records ingested", func() bool {
		left, _ := os.ReadDir(dir)
		return len(left) == 0
	})
	if q, _ := os.ReadDir(cfg.Ingest.Quarantine); len(q) != 0 {
		t.Fatalf("records quarantined; log %s", log1.String())
	}
	cancel1()
	if err := <-done1; err != nil {
		t.Fatalf("first serve: %v; log %s", err, log1.String())
	}
	m1.Close()

	// The node's agent is back: its snapshot puts the GPU on the board.
	util := uint32(0)
	live := record.Live{Schema: record.LiveSchema, Cluster: cfg.Cluster.Name, Node: node, Time: time.Now().UTC(), Interval: 10,
		GPUs: []record.LiveGPU{{Index: 0, UUID: uuid, Model: "NVIDIA H100 80GB HBM3", Util: &util}}}
	b, err := json.Marshal(&live)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.Board.LiveDir, record.LiveFileName(node)), b, 0o644); err != nil {
		t.Fatal(err)
	}
	var log2 logs.Buffer
	m2 := &Main{Stderr: &log2, Getenv: func(string) string { return "" }, Config: cfg, Addr: make(chan string, 1)}
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	addr, done2 := startServe(ctx2, t, m2, &log2)
	// Stopped before its directories are removed, also when the test fails.
	t.Cleanup(func() { cancel2(); <-done2 })
	var runs []board.JobRun
	waitFor(t, "the board answering", func() bool {
		body, code := get("http://" + addr + "/api/v1/board?last_hour=1")
		if code != 200 {
			return false
		}
		var doc board.StatusDoc
		if err := json.Unmarshal([]byte(body), &doc); err != nil || len(doc.Nodes) != 1 || len(doc.Nodes[0].GPUs) != 1 {
			return false
		}
		if lh := doc.Nodes[0].GPUs[0].LastHour; lh != nil {
			runs = lh.Jobs
		}
		return true
	})
	if len(runs) != 1 || runs[0].Job != job {
		t.Fatalf("strip's jobs after a restart: %+v, want job %d's ten minutes; log %s", runs, job, log2.String())
	}
	from1, err1 := time.Parse(time.RFC3339, runs[0].From)
	to1, err2 := time.Parse(time.RFC3339, runs[0].To)
	if err1 != nil || err2 != nil {
		t.Fatalf("run's times %q %q: %v %v", runs[0].From, runs[0].To, err1, err2)
	}
	if d := to1.Sub(from1); d < 9*time.Minute || d > 11*time.Minute {
		t.Errorf("job %d held the GPU %v in the strip, want about 10 minutes", job, d)
	}
}
