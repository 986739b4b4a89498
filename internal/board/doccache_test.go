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
				b, err := Encoded(tc.snap, key, enc(key))
				if err != nil || string(b) != key {
					t.Fatalf("Encoded(%q) = %q, %v", key, b, err)
				}
			}
			if calls != tc.wantCalls {
				t.Errorf("%d encodings, want %d", calls, tc.wantCalls)
			}
			fail := errors.New("cannot")
			if _, err := Encoded(tc.snap, "c", func() ([]byte, error) { return nil, fail }); !errors.Is(err, fail) {
				t.Errorf("a failed encoding: %v", err)
			}
			if b, err := Encoded(tc.snap, "c", enc("c")); err != nil || string(b) != "c" {
				t.Errorf("after a failed encoding: %q, %v", b, err)
			}
		})
	}
}

// TestSnapshotEncodedTypes: a key holds a value of any type, made once;
// asked with another type it is made again for that asker, the first
// kept.
func TestSnapshotEncodedTypes(t *testing.T) {
	type doc struct{ raw, gz []byte }
	s := &Snapshot{docs: newDocCache()}
	calls := 0
	mk := func() (*doc, error) { calls++; return &doc{raw: []byte("x")}, nil }
	first, _ := Encoded(s, "k", mk)
	again, _ := Encoded(s, "k", mk)
	if first != again || calls != 1 {
		t.Errorf("%d makings, same value %t: want 1 and true", calls, first == again)
	}
	if b, err := Encoded(s, "k", func() ([]byte, error) { return []byte("other"), nil }); err != nil || string(b) != "other" {
		t.Errorf("another type for the key: %q, %v", b, err)
	}
	if d, _ := Encoded(s, "k", mk); d != first || calls != 1 {
		t.Errorf("after another type: %d makings, first kept %t", calls, d == first)
	}
}
