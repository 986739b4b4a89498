package ingest

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/testkit"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// While serve holds the writer lock, `gpuacct ignore` only queues a request;
// the ingest pass is what applies it.
func TestPassAppliesIgnoreRequests(t *testing.T) {
	e := newEnv(t)
	e.cfg.Report.Requests = filepath.Join(e.root, "requests")
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	if _, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 1, GPUsPerNode: 4, Start: start,
		Duration: time.Hour, Interval: 10 * time.Second, JobsPerNode: 4, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	s := e.open(t)
	defer s.Close()
	now := start.Add(2 * time.Hour)
	e.pass(t, s, now)
	job := ledgerdb.Scalar[int64](t, s.Path, `SELECT job_id FROM jobs ORDER BY job_id LIMIT 1`)
	// serve makes the queues at start; a command files into them.
	if err := requests.MakeQueues(e.cfg.Report.Requests, os.Getuid()); err != nil {
		t.Fatal(err)
	}
	if _, err := requests.Submit(e.cfg.Report.Requests, &requests.Request{Action: requests.Ignore, Jobs: []string{strconv.FormatInt(job, 10)},
		Reason: "benchmark run", By: "root", UID: os.Getuid(), Time: now}); err != nil {
		t.Fatal(err)
	}
	in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid()})
	if _, err := in.Pass(context.Background()); err != nil {
		t.Fatal(err)
	}
	in.applyRequests(context.Background())
	var ignored, others int
	ledgerdb.Row(t, s.Path, `SELECT sum(CASE WHEN ignored = 1 AND job_id = ? THEN 1 ELSE 0 END), sum(CASE WHEN ignored = 1 AND job_id != ? THEN 1 ELSE 0 END) FROM jobs`, []any{job, job}, &ignored, &others)
	if ignored != 1 || others != 0 {
		t.Fatalf("job %d ignored=%d, others ignored=%d; want the one job only", job, ignored, others)
	}
	pending, applied, err := requests.List(e.cfg.Report.Requests)
	if err != nil || len(pending) != 0 || len(applied) != 1 || applied[0].Error != "" {
		t.Fatalf("pending %v applied %+v err %v", pending, applied, err)
	}
}

// A note request filed while serve holds the lock waits in the note
// queue, which serve's pass made (mode 1733, so any user may file one);
// the next pass keeps the note with the request file's owner as author.
func TestPassAppliesNoteRequests(t *testing.T) {
	testkit.NeedRoot(t, "give the request file to another user (chown)")
	e := newEnv(t)
	e.cfg.Report.Requests = filepath.Join(e.root, "requests")
	e.cfg.Cluster.Name = "c1"
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	s := e.open(t)
	defer s.Close()
	// The writer keeps notes only on nodes it knows.
	b, err := s.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Node("c1", "gpu01"); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid()})
	in.applyRequests(context.Background())
	r := &requests.Request{Action: requests.NoteAdd, Note: &requests.Note{Node: "gpu01", Until: now.Add(time.Hour), Text: "booked"},
		By: "root", UID: 0, Time: now}
	path, err := requests.Submit(e.cfg.Report.Requests, r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(path, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	if kept, err := s.Notes(context.Background(), now, true); err != nil || len(kept) != 0 {
		t.Fatalf("before the pass: %+v, %v", kept, err)
	}
	in.applyRequests(context.Background())
	kept, err := s.Notes(context.Background(), now, false)
	if err != nil || len(kept) != 1 || kept[0].UID != 1000 || kept[0].Cluster != "c1" || kept[0].Text != "booked" {
		t.Fatalf("after the pass: %+v, %v; want one note by uid 1000", kept, err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("request still pending after the pass: %v", err)
	}
}
