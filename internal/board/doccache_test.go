package board

import (
	"errors"
	"testing"
)

// TestSnapshotEncoded: a built snapshot encodes each key once, whoever
// asks; an error is not kept; a snapshot made by hand encodes each time.
func TestSnapshotEncoded(t *testing.T) {
	for _, tc := range []struct {
		name      string
		snap      *Snapshot
		wantCalls int
	}{
		{"built", &Snapshot{docs: newDocCache()}, 2}, // "a" once, "b" once
		{"by hand", &Snapshot{}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			enc := func(s string) func() ([]byte, error) {
				return func() ([]byte, error) { calls++; return []byte(s), nil }
			}
			for _, key := range []string{"a", "a", "b", "b"} {
				b, err := tc.snap.Encoded(key, enc(key))
				if err != nil || string(b) != key {
					t.Fatalf("Encoded(%q) = %q, %v", key, b, err)
				}
			}
			if calls != tc.wantCalls {
				t.Errorf("%d encodings, want %d", calls, tc.wantCalls)
			}
			fail := errors.New("cannot")
			if _, err := tc.snap.Encoded("c", func() ([]byte, error) { return nil, fail }); !errors.Is(err, fail) {
				t.Errorf("a failed encoding: %v", err)
			}
			if b, err := tc.snap.Encoded("c", enc("c")); err != nil || string(b) != "c" {
				t.Errorf("after a failed encoding: %q, %v", b, err)
			}
		})
	}
}
