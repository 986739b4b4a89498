package gendata

import (
	"math/rand"
	"slices"
	"testing"
)

// TestGPUBlocks: the blocks cover the node's GPUs once, in order, each
// of a drawn size but the last, which is cut to the GPUs left.
func TestGPUBlocks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		gpus  int
		sizes []int
	}{
		{"no GPUs", 0, []int{1, 2, 4}},
		{"one GPU", 1, []int{4}},
		{"uneven", 13, []int{1, 2, 4, 8}},
		{"a node of 8", 8, []int{1, 2, 4}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			blocks := gpuBlocks(rand.New(rand.NewSource(1)), tc.gpus, tc.sizes)
			next := 0
			for i, b := range blocks {
				last := i == len(blocks)-1
				if !slices.Contains(tc.sizes, len(b)) && !(last && next+len(b) == tc.gpus) {
					t.Errorf("block %d has %d GPUs, not one of %v", i, len(b), tc.sizes)
				}
				for _, g := range b {
					if g != next {
						t.Fatalf("blocks %v: GPU %d where %d was due", blocks, g, next)
					}
					next++
				}
			}
			if next != tc.gpus {
				t.Errorf("blocks %v cover %d of %d GPUs", blocks, next, tc.gpus)
			}
		})
	}
}
