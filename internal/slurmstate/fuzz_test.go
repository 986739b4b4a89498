package slurmstate

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func seedLines(f *testing.F, names ...string) {
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join("testdata", n))
		if err != nil {
			f.Fatal(err)
		}
		for _, line := range bytes.Split(b, []byte("\n")) {
			f.Add(line)
		}
	}
}

// FuzzParseNodes: any input parses or errs; a parsed node has a name,
// a state and counts that add up.
func FuzzParseNodes(f *testing.F) {
	seedLines(f, "nodes-22.05.txt", "nodes-multiline.txt")
	f.Fuzz(func(t *testing.T, in []byte) {
		nodes, err := ParseNodes(in, zone)
		if err != nil {
			return
		}
		for _, n := range nodes {
			if n.Name == "" || n.State == "" {
				t.Fatalf("node without name or state from %q: %+v", in, n)
			}
			sum := 0
			for _, g := range n.GPUs {
				sum += g.Count
			}
			if sum != n.GPUCount {
				t.Fatalf("GPU counts %d != %d from %q", sum, n.GPUCount, in)
			}
		}
	})
}

func FuzzParseReservations(f *testing.F) {
	seedLines(f, "reservations-22.05.txt", "reservations-none.txt")
	f.Fuzz(func(t *testing.T, in []byte) {
		res, err := ParseReservations(in, zone)
		if err != nil {
			return
		}
		total := 0
		for _, r := range res {
			if r.Name == "" {
				t.Fatalf("reservation without a name from %q", in)
			}
			total += len(r.Nodes)
		}
		if total > maxReservedNames {
			t.Fatalf("%d names from %q", total, in)
		}
	})
}

func FuzzExpandHostlist(f *testing.F) {
	for _, s := range []string{"gpu[01-03,07],login1", "r[1-2]-n[01-10]", "a[9-10]b", "x[1-99999]"} {
		f.Add(s, 1000)
	}
	f.Fuzz(func(t *testing.T, in string, max int) {
		names, err := ExpandHostlist(in, max)
		if err != nil {
			return
		}
		bound := max
		if bound <= 0 {
			bound = MaxHostlistNames
		}
		if len(names) > bound {
			t.Fatalf("%d names from %q, bound %d", len(names), in, bound)
		}
	})
}
