package ledgerdb

import (
	"context"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

// TestHelpers: rows poked with Exec and Tx read back through every
// reader, beside an open writer (as tests use them).
func TestHelpers(t *testing.T) {
	l := NewLedger(t)
	path := l.Loc()
	s, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := Exec(t, path, `INSERT INTO passes(started, finished, ok, error) VALUES(?, ?, 1, NULL), (?, ?, 0, 'disk full')`, 10, 11, 20, 21); n != 2 {
		t.Errorf("Exec changed %d rows, want 2", n)
	}
	Tx(t, path, func(exec func(string, ...any)) {
		exec(`INSERT INTO passes(started, finished, ok) VALUES(30, 31, 1)`)
		exec(`UPDATE passes SET ok = 0 WHERE started = ?`, 30)
	})
	if got := Scalar[int64](t, path, `SELECT count(*) FROM passes WHERE ok = ?`, 0); got != 2 {
		t.Errorf("Scalar = %d, want 2", got)
	}
	var started, finished int64
	Row(t, path, `SELECT started, finished FROM passes WHERE error = ?`, []any{"disk full"}, &started, &finished)
	if started != 20 || finished != 21 {
		t.Errorf("Row = %d, %d; want 20, 21", started, finished)
	}
	var got []int64
	Query(t, path, `SELECT started FROM passes ORDER BY started`, nil, func(scan func(...any)) {
		var v int64
		scan(&v)
		got = append(got, v)
	})
	if diff := cmp.Diff([]int64{10, 20, 30}, got); diff != "" {
		t.Errorf("Query (-want +got):\n%s", diff)
	}
	want := []string{"10|1|NULL", "20|0|disk full", "30|0|NULL"}
	if diff := cmp.Diff(want, Strings(t, path, `SELECT started, ok, error FROM passes ORDER BY started`)); diff != "" {
		t.Errorf("Strings (-want +got):\n%s", diff)
	}
	// The writer sees what the helpers wrote: it is the same ledger.
	p, found, err := s.LastPass(context.Background())
	if err != nil || !found || p.Started != 30 || p.OK {
		t.Errorf("writer's LastPass = %+v, %v, %v; want the pass at 30, failed", p, found, err)
	}
}

// TestFailures: a bad statement fails the test (a fixture cannot fail
// silently).
func TestFailures(t *testing.T) {
	l := NewLedger(t)
	path := l.Loc()
	s, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, tc := range []struct {
		name string
		fn   func(tb testing.TB)
	}{
		{"exec", func(tb testing.TB) { Exec(tb, path, `INSERT INTO nosuch VALUES(1)`) }},
		{"tx", func(tb testing.TB) { Tx(tb, path, func(exec func(string, ...any)) { exec(`DELETE FROM nosuch`) }) }},
		{"no row", func(tb testing.TB) { Scalar[int](tb, path, `SELECT id FROM passes`) }},
		{"query", func(tb testing.TB) { Query(tb, path, `SELECT nosuch FROM passes`, nil, func(func(...any)) {}) }},
		{"strings", func(tb testing.TB) { Strings(tb, path, `SELECT * FROM nosuch`) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{TB: t}
			done := make(chan struct{})
			go func() {
				defer close(done)
				tc.fn(r)
			}()
			<-done
			if !r.failed {
				t.Errorf("%s: no failure reported", tc.name)
			}
		})
	}
}

// recorder notes Fatalf and ends the goroutine, as testing.T does.
type recorder struct {
	testing.TB
	failed bool
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(string, ...any) {
	r.failed = true
	runtime.Goexit()
}

// TestEngine: the engine is sqlite unless the environment names
// postgres; anything else fails the test, saying what it wants.
func TestEngine(t *testing.T) {
	for _, tc := range []struct {
		env, want string
		fails     bool
	}{
		{"", "sqlite", false},
		{"sqlite", "sqlite", false},
		{"postgres", "postgres", false},
		{"mysql", "", true},
	} {
		t.Run(tc.env, func(t *testing.T) {
			t.Setenv(EnvEngine, tc.env)
			r := &recorder{TB: t}
			var got string
			done := make(chan struct{})
			go func() {
				defer close(done)
				got = Engine(r)
			}()
			<-done
			if got != tc.want || r.failed != tc.fails {
				t.Errorf("Engine() = %q, failed %v; want %q, failed %v", got, r.failed, tc.want, tc.fails)
			}
		})
	}
}
