package ingest

import (
	"context"
	"testing"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestAppliedKeysAskedAhead: the keys of a pass's files are asked by their
// names, store.MaxKeysAsked at a time, and each file's state is the
// ledger's: new, applied with the same content, or with other content; a
// key the pass applies is known to the rest of it, and a record whose
// name says no key (a GPU event) is asked about alone.
func TestAppliedKeysAskedAhead(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	ctx := context.Background()
	n := 2*store.MaxKeysAsked + 1
	var files []file
	parsed := make([]*Parsed, n)
	for i := range n {
		job := uint64(i + 1)
		files = append(files, file{node: "gpu001", name: record.EventFileName("c1", job, 0, "gpu001", record.JobStart)})
		parsed[i] = &Parsed{Event: &record.Event{Key: record.EventKey("c1", job, 0, "gpu001", record.JobStart)}, ContentHash: "same"}
	}
	gpuEvent := &Parsed{GPUEvent: &record.GPUEvent{Key: "c1/gpu001/GPU-a/1/xid/79"}, ContentHash: "same"}
	// Every third key was applied by an earlier pass, and the GPU event.
	b, err := s.Begin(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i += 3 {
		if err := b.KeyApplied(recordKey(parsed[i]), "same"); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.KeyApplied(recordKey(gpuEvent), "same"); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}

	b, err = s.Begin(ctx, t0)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	keys := newAppliedKeys(newSeenFiles(files))
	for i, f := range files {
		p := parsed[i]
		want := store.KeyNew
		switch {
		case i%6 == 0:
			p.ContentHash = "other" // applied before with other content
			want = store.KeyConflict
		case i%3 == 0:
			want = store.KeyApplied
		}
		got, key, err := keys.state(b, f, p)
		if err != nil {
			t.Fatal(err)
		}
		if got != want || key != recordKey(p) {
			t.Fatalf("file %d: state %v of key %q, want %v of %q", i, got, key, want, recordKey(p))
		}
		if wantNext := min(n, (i/store.MaxKeysAsked+1)*store.MaxKeysAsked); keys.next != wantNext {
			t.Fatalf("after file %d, files up to %d asked about, want %d", i, keys.next, wantNext)
		}
		if want == store.KeyNew {
			if err := keys.applied(b, p); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The pass applied the new keys: a second look finds them.
	for i, f := range files {
		if got, _, err := keys.state(b, f, parsed[i]); err != nil || got == store.KeyNew {
			t.Fatalf("file %d again: state %v, %v; want it applied", i, got, err)
		}
	}
	gpuFile := file{node: "gpu001", name: record.GPUEventFileName("c1", "gpu001", "GPU-a", t0, record.GPUXid, 79, "")}
	for _, tc := range []struct {
		hash string
		want store.KeyState
	}{{"same", store.KeyApplied}, {"other", store.KeyConflict}} {
		gpuEvent.ContentHash = tc.hash
		if got, _, err := keys.state(b, gpuFile, gpuEvent); err != nil || got != tc.want {
			t.Errorf("GPU event of content %q: state %v, %v; want %v", tc.hash, got, err, tc.want)
		}
	}
}
