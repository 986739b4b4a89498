package board

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

func writeLive(t *testing.T, dir, name string, l record.Live) {
	t.Helper()
	data, err := json.Marshal(l)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// problemFiles maps each problem's file to a word its reason must hold.
func checkProblems(t *testing.T, probs []Problem, want map[string]string) {
	t.Helper()
	got := map[string]string{}
	for _, p := range probs {
		got[p.File] = p.Err
	}
	if len(got) != len(want) {
		t.Errorf("problems %v, want files %v", probs, want)
	}
	for file, word := range want {
		if !strings.Contains(got[file], word) {
			t.Errorf("problem for %q is %q, want it to say %q", file, got[file], word)
		}
	}
}

func TestLoad(t *testing.T) {
	good := fresh("n1", gpu(10, 7))
	future := fresh("n5", gpu(0))
	future.Time = now.Add(time.Hour)
	tests := []struct {
		name  string
		setup func(t *testing.T, dir string)
		lim   Limits
		nodes []string
		probs map[string]string
	}{
		{"good file", func(t *testing.T, dir string) { writeLive(t, dir, "n1.json", good) }, Limits{}, []string{"n1"}, nil},
		{"a file speaking for another node", func(t *testing.T, dir string) {
			writeLive(t, dir, "n1.json", good)
			writeLive(t, dir, "n2.json", good)
		}, Limits{}, []string{"n1"}, map[string]string{"n2.json": `speaks for node "n1"`}},
		{"oversized file", func(t *testing.T, dir string) {
			writeLive(t, dir, "n1.json", good)
			big := fresh("n2", gpu(0))
			big.Cluster = strings.Repeat("x", 2000)
			writeLive(t, dir, "n2.json", big)
		}, Limits{MaxFileBytes: 1000}, []string{"n1"}, map[string]string{"n2.json": "more than the 1000 a snapshot may be"}},
		{"symlink", func(t *testing.T, dir string) {
			other := t.TempDir()
			writeLive(t, other, "n1.json", good)
			if err := os.Symlink(filepath.Join(other, "n1.json"), filepath.Join(dir, "n1.json")); err != nil {
				t.Fatal(err)
			}
		}, Limits{}, nil, map[string]string{"n1.json": "symbolic link"}},
		{"fifo is not read (and does not block)", func(t *testing.T, dir string) {
			if err := syscall.Mkfifo(filepath.Join(dir, "n1.json"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, Limits{}, nil, map[string]string{"n1.json": "not a regular file"}},
		{"garbage json, wrong schema, unknown field, future time", func(t *testing.T, dir string) {
			os.WriteFile(filepath.Join(dir, "n1.json"), []byte("{not json"), 0o644)
			os.WriteFile(filepath.Join(dir, "n2.json"), []byte(`{"schema":"other/v1","node":"n2"}`), 0o644)
			os.WriteFile(filepath.Join(dir, "n3.json"), []byte(`{"schema":"gpusuite.live/v1","node":"n3","bogus":1}`), 0o644)
			writeLive(t, dir, "n5.json", future)
			os.WriteFile(filepath.Join(dir, ".n4.json.tmp"), []byte("partial"), 0o644)
			os.WriteFile(filepath.Join(dir, "README"), []byte("hi"), 0o644)
		}, Limits{}, nil, map[string]string{"n1.json": "not a live snapshot", "n2.json": "schema", "n3.json": "unknown field", "n5.json": "check the node's clock"}},
		{"more files than the limit", func(t *testing.T, dir string) {
			for _, n := range []string{"n1", "n2", "n3"} {
				writeLive(t, dir, n+".json", fresh(n, gpu(0)))
			}
		}, Limits{MaxFiles: 2}, []string{"n1", "n2"}, map[string]string{"": "more than 2 snapshots"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tt.setup(t, dir)
			lives, probs := Load(dir, now, tt.lim)
			var nodes []string
			for _, l := range lives {
				nodes = append(nodes, l.Node)
			}
			if diff := cmp.Diff(tt.nodes, nodes); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			checkProblems(t, probs, tt.probs)
		})
	}
}

func TestLoadMissingDir(t *testing.T) {
	lives, probs := Load(filepath.Join(t.TempDir(), "absent"), now, Limits{})
	if len(lives) != 0 {
		t.Errorf("lives %v from a missing directory", lives)
	}
	checkProblems(t, probs, map[string]string{"": "is the share mounted"})
}

// LoadNode reads the one node's file with Load's checks, and nothing else.
func TestLoadNode(t *testing.T) {
	dir := t.TempDir()
	writeLive(t, dir, record.LiveFileName("n1"), fresh("n1", gpu(0), gpu(0)))
	writeLive(t, dir, record.LiveFileName("n2"), fresh("n3", gpu(0)))
	for _, tc := range []struct {
		node, err string
		gpus      int
	}{
		{node: "n1", gpus: 2},
		{node: "n2", err: "speaks for node"},
		{node: "n9", err: "no such file"},
		{node: "../n1", err: "not a node name"},
		{node: "", err: "not a node name"},
	} {
		t.Run(tc.node, func(t *testing.T) {
			l, err := LoadNode(dir, tc.node, now, Limits{})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one with %q", err, tc.err)
				}
				return
			}
			if err != nil || l.Node != tc.node || len(l.GPUs) != tc.gpus {
				t.Fatalf("got %s with %d GPUs, %v; want %s with %d", l.Node, len(l.GPUs), err, tc.node, tc.gpus)
			}
		})
	}
}
