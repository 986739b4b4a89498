package ship

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/spool"
)

func names(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

// TestPass: a pass ships aggregates, segments and the events the caller
// handled, removes their local copies and counts each; an event not yet
// handled stays for the next pass. A missing incoming directory is an
// error that names it, and nothing leaves the spool.
func TestPass(t *testing.T) {
	root := t.TempDir()
	sp := spool.Dir{Path: filepath.Join(root, "spool")}
	if err := sp.Ensure(); err != nil {
		t.Fatal(err)
	}
	handled := record.EventFileName("cl", 7, 0, "n1", record.JobStart)
	waiting := record.EventFileName("cl", 8, 0, "n1", record.JobStart)
	agg := record.JobGPUFileName("cl", 7, 0, "n1", "GPU-1", 3)
	seg := record.SegmentFileName("cl", "n1", 3)
	for _, n := range []string{handled, waiting, agg, seg} {
		if err := sp.Write(n, []byte(`{"name":"`+n+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	count := 0
	s := &Shipper{Spool: sp, Incoming: filepath.Join(root, "incoming"), Node: "n1", Shipped: func() { count++ }}

	if n, err := s.Pass(context.Background(), []string{handled}); err == nil || n != 0 || !strings.Contains(err.Error(), s.Incoming) {
		t.Fatalf("pass without incoming: %d, %v", n, err)
	}
	if diff := cmp.Diff(sortedCopy(handled, waiting, agg, seg), names(t, sp.Path)); diff != "" {
		t.Fatalf("spool after a failed pass (-want +got):\n%s", diff)
	}

	if err := os.Mkdir(s.Incoming, 0o755); err != nil {
		t.Fatal(err)
	}
	n, err := s.Pass(context.Background(), []string{handled})
	if err != nil || n != 3 || count != 3 {
		t.Fatalf("pass: %d shipped, %d counted, %v", n, count, err)
	}
	if diff := cmp.Diff(sortedCopy(handled, agg, seg), names(t, filepath.Join(s.Incoming, "n1"))); diff != "" {
		t.Errorf("incoming (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{waiting}, names(t, sp.Path)); diff != "" {
		t.Errorf("spool (-want +got):\n%s", diff)
	}
	data, err := os.ReadFile(filepath.Join(s.Incoming, "n1", agg))
	if err != nil || string(data) != `{"name":"`+agg+`"}` {
		t.Errorf("shipped copy of %s: %q, %v", agg, data, err)
	}
}

func sortedCopy(s ...string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

// TestCountBacklog counts files by kind with their bytes, leaving out
// temp files.
func TestCountBacklog(t *testing.T) {
	sp := spool.Dir{Path: t.TempDir()}
	files := map[string]string{
		record.EventFileName("cl", 7, 0, "n1", record.JobStart): "12345",
		record.JobGPUFileName("cl", 7, 0, "n1", "GPU-1", 3):     "123",
		record.SegmentFileName("cl", "n1", 3):                   "1234567",
		record.SegmentFileName("cl", "n1", 4):                   "1",
		"notes.txt":                                             "12",
	}
	for n, c := range files {
		if err := sp.Write(n, []byte(c)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(sp.Path, ".tmp-x"), []byte("1234"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := CountBacklog(sp.Path)
	if err != nil {
		t.Fatal(err)
	}
	want := Backlog{Files: map[record.FileKind]int{"event": 1, "jobgpu": 1, "samples": 2, "other": 1}, Bytes: 5 + 3 + 7 + 1 + 2, Total: 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("backlog (-want +got):\n%s", diff)
	}
	if _, err := CountBacklog(filepath.Join(sp.Path, "missing")); err == nil {
		t.Error("a missing spool counts without error")
	}
}
