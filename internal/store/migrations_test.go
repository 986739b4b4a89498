package store

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMigrationsAlike: both engines' migrations name the same versions
// with the same names, so that a ledger's schema version means the same
// tables on either (gpuacct migrate relies on it).
func TestMigrationsAlike(t *testing.T) {
	names := func(engine string) []string {
		ms, err := migrations(engine)
		if err != nil {
			t.Fatalf("%s migrations: %v", engine, err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.name)
		}
		return out
	}
	sq, pg := names(EngineSQLite), names(EnginePostgres)
	if len(sq) == 0 {
		t.Fatal("no SQLite migrations embedded")
	}
	if d := cmp.Diff(sq, pg); d != "" {
		t.Errorf("migrations differ between engines (-sqlite +postgres):\n%s", d)
	}
}
