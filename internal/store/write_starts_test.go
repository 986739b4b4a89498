package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

// evJob is ev for job id.
func evJob(kind record.Kind, node string, at time.Time, gpus int, id uint64) *record.Event {
	e := ev(kind, node, at, gpus)
	e.Job.ID = id
	e.Key = record.EventKey("c", id, 0, node, kind)
	return e
}

// TestStartFromEndThenSacct: a job seen only by its end has its end for
// a start, estimated, until sacct gives the real one.
func TestStartFromEndThenSacct(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	now := t0.Add(4 * time.Hour)
	batchOf(t, s, now, func(b *Batch) error { return b.Event(evJob(record.JobEnd, "n1", t0.Add(2*time.Hour), 1, 7)) })

	var got []NoStart
	batchOf(t, s, now, func(b *Batch) error {
		var err error
		got, err = b.NoStarts(10, "sacct", t0)
		return err
	})
	if len(got) != 1 {
		t.Fatalf("NoStarts = %+v, want the one job", got)
	}
	n := got[0]
	if n.JobID != 7 || n.Source != "end" || !n.End.Equal(t0.Add(2*time.Hour)) {
		t.Errorf("NoStarts = %+v, want job 7 from its end at %v", n, t0.Add(2*time.Hour))
	}
	if k, err := s.EstimatedStarts(ctx); err != nil || k != 1 {
		t.Errorf("EstimatedStarts = %d, %v; want 1", k, err)
	}
	batchOf(t, s, now, func(b *Batch) error {
		_, found, err := b.FirstSample(n)
		if err == nil && found {
			t.Errorf("FirstSample found a sample of a job without any")
		}
		return err
	})
	batchOf(t, s, now, func(b *Batch) error { return b.SetStart(n, t0, "sacct") })
	if k, err := s.EstimatedStarts(ctx); err != nil || k != 0 {
		t.Errorf("EstimatedStarts after sacct = %d, %v; want 0", k, err)
	}
	want := []string{"7|1772445600|1772452800|completed|0|sacct|start_from_sacct"}
	if diff := cmp.Diff(want, dump(t, s.db, `SELECT j.job_id, j.start, j.end, j.state, n.start_estimated, n.start_source, n.quality
 FROM jobs j JOIN job_nodes n ON n.job = j.id`)); diff != "" {
		t.Errorf("job after sacct's start (-want +got):\n%s", diff)
	}
}

// TestDetailsAndStaleOpen: sacct's details mark a job checked; a job
// whose node went quiet is found open and closed by sacct's end.
func TestDetailsAndStaleOpen(t *testing.T) {
	s := openTemp(t)
	t0 := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	now := t0.Add(48 * time.Hour)
	batchOf(t, s, now, func(b *Batch) error {
		for _, e := range []*record.Event{
			evJob(record.JobStart, "n1", t0, 1, 7),
			evJob(record.JobEnd, "n1", t0.Add(time.Hour), 1, 7),
			evJob(record.JobStart, "n2", t0, 2, 8),
		} {
			if err := b.Event(e); err != nil {
				return err
			}
		}
		return nil
	})
	var unchecked []UncheckedJob
	batchOf(t, s, now, func(b *Batch) error {
		var err error
		unchecked, err = b.UncheckedJobs(0, 10)
		return err
	})
	if len(unchecked) != 2 || unchecked[0].JobID != 7 || !unchecked[0].Seen.Equal(t0.Add(time.Hour)) || unchecked[1].JobID != 8 || !unchecked[1].Seen.Equal(t0) {
		t.Fatalf("UncheckedJobs = %+v, want job 7 seen at its end, job 8 at its start", unchecked)
	}
	batchOf(t, s, now, func(b *Batch) error {
		if err := b.SetJobDetails(unchecked[0].Row, JobDetails{Comment: "sweep", ArrayJobID: 70, ArrayTaskID: 3}); err != nil {
			return err
		}
		return b.GiveUpJobDetails(unchecked[1].Row)
	})
	batchOf(t, s, now, func(b *Batch) error {
		left, err := b.UncheckedJobs(0, 10)
		if err == nil && len(left) != 0 {
			t.Errorf("UncheckedJobs after the details = %+v, want none", left)
		}
		return err
	})
	var open []OpenJob
	batchOf(t, s, now, func(b *Batch) error {
		var err error
		open, err = b.StaleOpen(t0.Add(time.Hour))
		return err
	})
	if len(open) != 1 || open[0].JobID != 8 || !open[0].Started.Equal(t0) {
		t.Fatalf("StaleOpen = %+v, want job 8 started at %v", open, t0)
	}
	code := 0
	batchOf(t, s, now, func(b *Batch) error {
		return b.CloseJob(open[0], t0.Add(3*time.Hour), "sacct", "completed", &code)
	})
	want := []string{
		"7|sweep|70|3|1|completed|1772449200",
		"8|NULL|NULL|NULL|2|completed|1772456400",
	}
	if diff := cmp.Diff(want, dump(t, s.db, `SELECT job_id, comment, array_job_id, array_task_id, details_checked, state, end FROM jobs ORDER BY job_id`)); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
}

// TestKeysAndFiles: a key applied is known with its content; a file
// ingested is known by name and content.
func TestKeysAndFiles(t *testing.T) {
	s := openTemp(t)
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	batchOf(t, s, now, func(b *Batch) error {
		if err := b.KeyApplied("k1", "aa"); err != nil {
			return err
		}
		return b.FileIngested("n1", "f1", "aa", 10, 2)
	})
	batchOf(t, s, now, func(b *Batch) error {
		for _, tc := range []struct {
			key, hash string
			want      KeyState
		}{{"k1", "aa", KeyApplied}, {"k1", "bb", KeyConflict}, {"k2", "aa", KeyNew}} {
			got, err := b.AppliedKey(tc.key, tc.hash)
			if err != nil {
				return err
			}
			if got != tc.want {
				t.Errorf("AppliedKey(%s, %s) = %v, want %v", tc.key, tc.hash, got, tc.want)
			}
		}
		// A key applied earlier in the batch is known to the many-key
		// read too (on PostgreSQL its write waits in the pipeline).
		if err := b.KeyApplied("k3", "cc"); err != nil {
			return err
		}
		known, err := b.KeysKnown([]string{"k1", "k2", "k3"})
		if err != nil {
			return err
		}
		if d := cmp.Diff(map[string]Content{"k1": ContentOf("aa"), "k3": ContentOf("cc")}, known); d != "" {
			t.Errorf("KeysKnown (-want +got):\n%s", d)
		}
		// Recorded twice in a batch: a file keeps its last content, a key
		// its first (one statement for all on PostgreSQL, as one each).
		for _, h := range []string{"x", "y"} {
			if err := b.FileIngested("n1", "f2", h, 1, 1); err != nil {
				return err
			}
			if err := b.KeyApplied("k4", h); err != nil {
				return err
			}
		}
		for _, tc := range []struct {
			hash string
			file bool
			key  KeyState
		}{{"x", false, KeyApplied}, {"y", true, KeyConflict}} {
			seen, err := b.FileSeen("n1", "f2", tc.hash)
			if err != nil {
				return err
			}
			st, err := b.AppliedKey("k4", tc.hash)
			if err != nil {
				return err
			}
			if seen != tc.file || st != tc.key {
				t.Errorf("recorded twice, content %s: file seen %v, key %v; want %v, %v", tc.hash, seen, st, tc.file, tc.key)
			}
		}
		if _, err := b.KeysKnown(make([]string, MaxKeysAsked+1)); err == nil {
			t.Errorf("KeysKnown of %d keys: no error, want one (at most %d)", MaxKeysAsked+1, MaxKeysAsked)
		}
		for _, tc := range []struct {
			node, name, hash string
			want             bool
		}{{"n1", "f1", "aa", true}, {"n1", "f1", "bb", false}, {"n2", "f1", "aa", false}} {
			got, err := b.FileSeen(tc.node, tc.name, tc.hash)
			if err != nil {
				return err
			}
			if got != tc.want {
				t.Errorf("FileSeen(%s, %s, %s) = %v, want %v", tc.node, tc.name, tc.hash, got, tc.want)
			}
		}
		return nil
	})
	if n := s.Size(); n <= 0 {
		t.Errorf("Size = %d, want the ledger's bytes", n)
	}
}
