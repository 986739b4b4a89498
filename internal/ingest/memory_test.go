package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/sim/gendata"
)

// bigSegment generates one node's day of samples as one segment file
// (about 18 MB) and returns its path and a validator for it.
func bigSegment(t *testing.T, e *env) (string, Validator) {
	t.Helper()
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	if _, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 1, GPUsPerNode: 8, Start: start,
		Duration: 24 * time.Hour, Segment: 24 * time.Hour, Interval: 10 * time.Second, JobsPerNode: 40, Seed: 9}); err != nil {
		t.Fatal(err)
	}
	segs := mustGlob(t, filepath.Join(e.cfg.Ingest.Incoming, "gpu001", "samples.*"))
	if len(segs) != 1 {
		t.Fatalf("%d segments, want 1", len(segs))
	}
	return segs[0], Validator{Now: start.Add(48 * time.Hour), MaxFuture: time.Hour}
}

// TestLoadMemory: a file in flight (read, hashed, decoded, validated,
// waiting for the writer) takes at most 1.5 times its size of heap. All
// that loading it allocates, garbage included, is counted, which bounds
// its peak as well as what it keeps.
func TestLoadMemory(t *testing.T) {
	e := newEnv(t)
	path, v := bigSegment(t, e)
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	in := New(Deps{Config: e.cfg, Log: quiet(), UID: os.Getuid()})
	l := loaded{f: file{node: "gpu001", name: filepath.Base(path), path: path, kind: kindOf(filepath.Base(path))}}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	in.load(&l, v)
	runtime.GC()
	runtime.ReadMemStats(&after)
	if l.readErr != nil || l.parseErr != nil {
		t.Fatalf("load: %v, %v", l.readErr, l.parseErr)
	}
	size := float64(st.Size())
	kept := float64(after.HeapAlloc) - float64(before.HeapAlloc)
	allocated := float64(after.TotalAlloc - before.TotalAlloc)
	t.Logf("file %.1f MB, %d samples: keeps %.1f MB (%.2fx), allocates %.1f MB (%.2fx)", size/1e6, len(l.p.Samples),
		kept/1e6, kept/size, allocated/1e6, allocated/size)
	if allocated > 1.5*size {
		t.Errorf("loading a %.1f MB segment allocates %.1f MB (%.2fx its size), over 1.5x", size/1e6, allocated/1e6, allocated/size)
	}
	if kept > 1.5*size {
		t.Errorf("a loaded %.1f MB segment keeps %.1f MB (%.2fx its size), over 1.5x", size/1e6, kept/1e6, kept/size)
	}
	runtime.KeepAlive(l)
	// The same as decoding the whole file at once.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := v.Parse("gpu001", l.f.name, data)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if l.size != len(data) || l.hash != hex.EncodeToString(sum[:]) {
		t.Errorf("streamed: %d bytes, sha256 %s; the file: %d, %x", l.size, l.hash, len(data), sum)
	}
	if d := cmp.Diff(want, l.p); d != "" {
		t.Errorf("streamed decoding differs from decoding the whole file (-whole +streamed):\n%s", d)
	}
}

// TestLoadSmallFileMemory: an event file of a kilobyte is read through a
// buffer of its size, not one of 64 KiB: a day's 25,000 events once
// allocated 1.7 GB of read buffers and kept the collector busy.
func TestLoadSmallFileMemory(t *testing.T) {
	e := newEnv(t)
	name, data := eventJSON(t, nil)
	path := filepath.Join(e.cfg.Ingest.Incoming, "gpu001", name)
	writeFile(t, path, data)
	in := New(Deps{Config: e.cfg, Log: quiet(), UID: os.Getuid()})
	v := Validator{Now: time.Now(), MaxFuture: time.Hour}
	const files = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range files {
		l := loaded{f: file{node: "gpu001", name: name, path: path, kind: kindOf(name)}}
		in.load(&l, v)
		if l.readErr != nil || l.parseErr != nil {
			t.Fatalf("load: %v, %v", l.readErr, l.parseErr)
		}
	}
	runtime.ReadMemStats(&after)
	each := float64(after.TotalAlloc-before.TotalAlloc) / files
	t.Logf("an event file of %d bytes allocates %.0f bytes to load", len(data), each)
	if each > 32<<10 {
		t.Errorf("loading an event file of %d bytes allocates %.0f bytes, over 32 KiB", len(data), each)
	}
}

// TestPrefetchBoundedByBytes: files are read ahead only while the bytes
// in flight (the writer's file included) stay within inFlight, however
// many the count bound would allow.
func TestPrefetchBoundedByBytes(t *testing.T) {
	e := newEnv(t)
	const size = 200 << 10
	e.cfg.Ingest.MaxFileSize = size
	name, data := eventJSON(t, nil)
	data = append(data, bytes.Repeat([]byte(" "), size-len(data))...) // valid JSON, padded
	var files []file
	for i := range 6 {
		dir := filepath.Join(e.cfg.Ingest.Incoming, fmt.Sprintf("gpu%03d", i+1))
		writeFile(t, filepath.Join(dir, name), data)
		files = append(files, file{node: filepath.Base(dir), name: name, path: filepath.Join(dir, name)})
	}
	in := New(Deps{Config: e.cfg, Log: quiet(), UID: os.Getuid()})
	p := in.prefetch(files, Validator{Now: time.Now(), MaxFuture: time.Hour})
	defer p.stop()
	// Two files fit in inFlight: the one the writer holds and one ahead.
	ahead := func(want int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			// The reader of files waits and has no room: it stays so.
			p.bytes.mu.Lock()
			stuck := p.bytes.waiting == 1 && p.bytes.free < size
			p.bytes.mu.Unlock()
			if stuck || time.Now().After(deadline) {
				break
			}
			runtime.Gosched()
		}
		if got := len(p.order); got != want {
			t.Errorf("%d files read ahead, want %d (inFlight %d bytes, files of %d)", got, want, inFlight(size), size)
		}
	}
	ahead(2)
	for i := range 4 {
		l := p.next()
		if l.readErr != nil || l.size != size {
			t.Fatalf("file %d: %v, %d bytes", i, l.readErr, l.size)
		}
		ahead(1)
	}
}
