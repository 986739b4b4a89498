package ledgerdb

import (
	"context"
	"testing"
)

// Lock holds the ledger at loc locked against every other connection
// until the test ends: SQLite's exclusive lock on the file, PostgreSQL's
// access-exclusive lock on the jobs table, which every reader passes.
// It is how a test shows a command's fallback when the ledger does not
// answer.
func Lock(t testing.TB, loc string) {
	t.Helper()
	l := open(t, loc)
	ctx := context.Background()
	conn, err := l.Conn(ctx)
	if err != nil {
		t.Fatalf("lock ledger %q: %v", loc, err)
	}
	steps := []string{"PRAGMA locking_mode = EXCLUSIVE", "BEGIN EXCLUSIVE", "UPDATE jobs SET comment = comment WHERE id = (SELECT MIN(id) FROM jobs)"}
	if l.pg {
		steps = []string{"BEGIN", "LOCK TABLE jobs IN ACCESS EXCLUSIVE MODE"}
	}
	for _, q := range steps {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			conn.Close()
			l.Close()
			t.Fatalf("lock ledger %q: %s: %v", loc, q, err)
		}
	}
	t.Cleanup(func() {
		conn.ExecContext(ctx, "ROLLBACK")
		conn.Close()
		l.Close()
	})
}
