package ingest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/sim/gendata"
)

// otherFS returns a fresh directory on a file system other than dir's
// (tmpfs /dev/shm against the disk under t.TempDir), so that rename
// between them fails with EXDEV; it fails the test if there is none.
func otherFS(t *testing.T, dir string) string {
	t.Helper()
	other, err := os.MkdirTemp("/dev/shm", "gpusuite-test-")
	if err != nil {
		t.Fatalf("a directory on tmpfs /dev/shm is needed to test moves across file systems: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(other) })
	if dev(t, other) == dev(t, dir) {
		t.Fatalf("%s and %s are on the same file system (st_dev %d): this test needs two", other, dir, dev(t, dir))
	}
	return other
}

func dev(t *testing.T, p string) uint64 {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return uint64(st.Sys().(*syscall.Stat_t).Dev)
}

// TestMoveFile: within and across file systems a move keeps content,
// mode and time, never replaces a file there, and leaves no temporary.
func TestMoveFile(t *testing.T) {
	srcDir := t.TempDir()
	tests := []struct {
		name string
		dir  string
	}{
		{"same file system", t.TempDir()},
		{"across file systems", otherFS(t, srcDir)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mtime := time.Date(2026, 3, 2, 1, 2, 3, 0, time.UTC)
			var want []string
			for i, content := range []string{"first\n", "second\n"} {
				src := filepath.Join(srcDir, "seg.jsonl")
				writeFile(t, src, []byte(content))
				if err := os.Chmod(src, 0o640); err != nil {
					t.Fatal(err)
				}
				if err := os.Chtimes(src, mtime, mtime); err != nil {
					t.Fatal(err)
				}
				dst, err := moveFile(src, tc.dir, "seg.jsonl")
				if err != nil {
					t.Fatalf("move %d: %v", i, err)
				}
				want = append(want, dst)
				if _, err := os.Lstat(src); !os.IsNotExist(err) {
					t.Errorf("move %d: source still there (%v)", i, err)
				}
				got, err := os.ReadFile(dst)
				if err != nil || string(got) != content {
					t.Errorf("move %d: %s holds %q (%v), want %q", i, dst, got, err, content)
				}
				st, err := os.Stat(dst)
				if err != nil {
					t.Fatal(err)
				}
				if st.Mode().Perm() != 0o640 || !st.ModTime().Equal(mtime) {
					t.Errorf("move %d: mode %v, time %v; want 0640, %v", i, st.Mode().Perm(), st.ModTime(), mtime)
				}
			}
			if want[0] != filepath.Join(tc.dir, "seg.jsonl") || want[1] != filepath.Join(tc.dir, "seg.jsonl.1") {
				t.Errorf("moved to %q, want seg.jsonl then seg.jsonl.1", want)
			}
			ents, _ := os.ReadDir(tc.dir)
			if len(ents) != 2 {
				t.Errorf("%d entries in the destination, want 2 (no temporary left)", len(ents))
			}
		})
	}
}

// TestPassAcrossFileSystems: with archive and quarantine on another file
// system than incoming, a pass empties incoming: ingested files are
// archived, bad ones quarantined with their reason.
func TestPassAcrossFileSystems(t *testing.T) {
	e := newEnv(t)
	other := otherFS(t, e.root)
	e.cfg.Ingest.Archive = filepath.Join(other, "archive")
	e.cfg.Ingest.Quarantine = filepath.Join(other, "quarantine")
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	truth, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 2, GPUsPerNode: 2, Start: start,
		Duration: time.Hour, Interval: 10 * time.Second, JobsPerNode: 4, HookEvents: true, Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	shipped := map[string][]byte{}
	for _, p := range mustGlob(t, filepath.Join(e.cfg.Ingest.Incoming, "*", "*")) {
		d, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		shipped[filepath.Base(p)] = d
	}
	badPath := filepath.Join(e.cfg.Ingest.Incoming, "gpu001", "event.garbage.json")
	writeFile(t, badPath, []byte("not json\n"))
	s := e.open(t)
	defer s.Close()
	res := e.pass(t, s, start.Add(2*time.Hour))
	if res.Files != truth.Files || res.Quarantined != 1 || res.Left != 0 {
		t.Errorf("pass: %+v, want %d files, 1 quarantined, none left", res, truth.Files)
	}
	checkTruth(t, s, truth)
	if left, _ := filepath.Glob(filepath.Join(e.cfg.Ingest.Incoming, "*", "*")); len(left) != 0 {
		t.Errorf("%d files left in incoming, e.g. %s", len(left), left[0])
	}
	archived := mustGlob(t, filepath.Join(e.cfg.Ingest.Archive, "*", "*", "*"))
	if len(archived) != len(shipped) {
		t.Errorf("%d files archived, want %d", len(archived), len(shipped))
	}
	for _, p := range archived {
		d, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(d, shipped[filepath.Base(p)]) {
			t.Errorf("archived %s differs from what was shipped (%v)", p, err)
		}
	}
	reason, err := os.ReadFile(filepath.Join(e.cfg.Ingest.Quarantine, "gpu001", "event.garbage.json.reason"))
	if err != nil || !strings.Contains(string(reason), "not a JSON record") {
		t.Errorf("quarantine reason %q (%v)", reason, err)
	}
}

// TestPassThatLeavesFilesFails: a pass that cannot archive what it
// ingested fails, and the passes table says how many files it left and
// since when, for gpuacct check.
func TestPassThatLeavesFilesFails(t *testing.T) {
	e := newEnv(t)
	// A file where the archive directory should be: nothing can go there.
	writeFile(t, e.cfg.Ingest.Archive, []byte("in the way\n"))
	start := time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)
	truth, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 1, GPUsPerNode: 2, Start: start,
		Duration: time.Hour, Interval: 10 * time.Second, JobsPerNode: 3, HookEvents: true, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	oldest := time.Date(2026, 3, 2, 0, 30, 0, 0, time.UTC)
	for i, p := range mustGlob(t, filepath.Join(e.cfg.Ingest.Incoming, "*", "*")) {
		m := oldest.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(p, m, m); err != nil {
			t.Fatal(err)
		}
	}
	s := e.open(t)
	defer s.Close()
	now := start.Add(2 * time.Hour)
	in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid()})
	for pass := 1; pass <= 2; pass++ {
		res, err := in.Pass(context.Background())
		if err == nil || !strings.Contains(err.Error(), "files left in incoming") || !strings.Contains(err.Error(), "archive") {
			t.Fatalf("pass %d: %v, want an error saying files were left and why", pass, err)
		}
		if res.Left != truth.Files || !res.OldestLeft.Equal(oldest) {
			t.Errorf("pass %d: left %d, oldest %v; want %d, %v", pass, res.Left, res.OldestLeft, truth.Files, oldest)
		}
		last, _, err := s.LastPass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		left, since, _, err := s.LastPassLeft(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if last.OK || left != int64(truth.Files) || since == nil || *since != oldest.Unix() {
			t.Errorf("pass %d recorded ok %v, files_left %d, oldest_left %v; want false, %d, %d", pass, last.OK, left, since, truth.Files, oldest.Unix())
		}
	}
	checkTruth(t, s, truth)
	// Once the archive can be written, the next pass retires them all.
	if err := os.Remove(e.cfg.Ingest.Archive); err != nil {
		t.Fatal(err)
	}
	res, err := in.Pass(context.Background())
	if err != nil || res.Left != 0 || res.Duplicates != truth.Files {
		t.Errorf("pass with the archive back: %v, %+v; want %d duplicates retired", err, res, truth.Files)
	}
}
