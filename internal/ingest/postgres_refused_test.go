package ingest

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/sim/gendata"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestPostgresRefusedWriteIsItsFiles: on PostgreSQL a batch queues its
// writes and the server answers for them together (store's pipeline).
// A write the server refuses sets aside the file that made it, and only
// that file: every other file of the batch is ingested, by a later pass
// if not this one.
func TestPostgresRefusedWriteIsItsFiles(t *testing.T) {
	e := newEnv(t)
	if e.cfg.Store.URL == "" {
		e.cfg.Store.URL = ledgerdb.NewPostgresDB(t)
	}
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	truth, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 2, GPUsPerNode: 2, Start: start,
		Duration: 3 * time.Hour, Interval: 10 * time.Second, JobsPerNode: 6, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	// Jobs on GPU 1 are refused; the others must all be stored.
	want := map[uint64]bool{}
	for _, j := range truth.JobList {
		if !slices.Contains(j.GPUs, 1) {
			want[j.ID] = true
		}
	}
	if len(want) == 0 || len(want) == len(truth.JobList) {
		t.Fatalf("the generated day has %d jobs, %d not on GPU 1: want both kinds", len(truth.JobList), len(want))
	}
	s, err := store.Open(context.Background(), e.storeOptions())
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// The server refuses a job's GPU 1, as a site's constraint would. A
	// job's GPUs are the last rows an event writes, so the refusal is
	// known only when the file's queue is sent.
	ledgerdb.Exec(t, e.cfg.Store.URL, `ALTER TABLE job_gpus ADD CONSTRAINT refuse_one CHECK (minor <> 1)`)

	now := start.Add(4 * time.Hour)
	in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid()})
	// Each refusal stops its pass once (the batch is rolled back and the
	// file set aside); the passes run until one ends clean, bounded.
	clean := false
	for range 50 {
		if _, err := in.Pass(context.Background()); err == nil {
			clean = true
			break
		} else if !strings.Contains(err.Error(), "refuse_one") {
			t.Fatalf("pass: %v, want only the refusal", err)
		}
	}
	if !clean {
		t.Fatal("no clean pass in 50")
	}
	reasons, _ := filepath.Glob(filepath.Join(e.cfg.Ingest.Quarantine, "*", "*.reason"))
	if len(reasons) == 0 {
		t.Fatal("no file set aside for the refused writes")
	}
	for _, r := range reasons {
		b, _ := os.ReadFile(r)
		if !strings.Contains(string(b), "refuse_one") {
			t.Errorf("%s set aside for %q, want the server's refusal", filepath.Base(r), strings.TrimSpace(string(b)))
		}
	}
	if n := ledgerdb.Scalar[int64](t, e.cfg.Store.URL, `SELECT count(*) FROM job_gpus WHERE minor = 1`); n != 0 {
		t.Errorf("%d job GPUs with minor 1 stored despite the refusal", n)
	}
	got := map[uint64]bool{}
	ledgerdb.Query(t, e.cfg.Store.URL, `SELECT j.job_id FROM jobs j JOIN job_gpus g ON g.job = j.id`, nil, func(scan func(dest ...any)) {
		var id int64
		scan(&id)
		got[uint64(id)] = true
	})
	for id := range want {
		if !got[id] {
			t.Errorf("job %d missing: a file beside a refused one was lost", id)
		}
	}
}
