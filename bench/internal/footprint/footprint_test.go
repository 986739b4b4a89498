package footprint

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

func TestStatCPU(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		want       time.Duration
		wantErr    bool
	}{
		{"plain", "42 (nfs-sync) S 1 42 42 0 -1 4194560 1 0 0 0 250 75 0 0 20 0 9 0 1 1 1", 3250 * time.Millisecond, false},
		// The command may hold spaces and a ')': the fields count from the last one.
		{"command with ') '", "42 (a) b) S 1 42 42 0 -1 4194560 1 0 0 0 7 3 0 0 20 0", 100 * time.Millisecond, false},
		{"cut short", "42 (x) S 1 42", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := statCPU([]byte(tc.stat))
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("statCPU = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
	if _, err := ProcCPU(os.Getpid()); err != nil {
		t.Errorf("ProcCPU of this process: %v", err)
	}
}

func TestDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "n1", "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"a": 3, "n1/b": 10, "n1/sub/c": 0} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files, bytes, err := Dir(dir)
	if err != nil || files != 3 || bytes != 13 {
		t.Errorf("Dir = %d files, %d bytes, %v; want 3, 13, nil", files, bytes, err)
	}
	if _, _, err := Dir(filepath.Join(dir, "gone")); err == nil {
		t.Error("Dir of a missing directory: no error")
	}
}

func TestRows(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: filepath.Join(t.TempDir(), "gpuacct.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	got, err := Rows(ctx, st)
	if err != nil {
		t.Fatal(err)
	}
	// The tables are the store's to list: the line is each as "name rows".
	counts, err := st.RowCounts(ctx)
	if err != nil || len(counts) < 2 || counts[0].Table != "jobs" {
		t.Fatalf("RowCounts = %v, %v; want jobs first and more", counts, err)
	}
	want := "jobs 0, " + counts[1].Table + " 0"
	for _, c := range counts[2:] {
		want += ", " + c.Table + " 0"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}
