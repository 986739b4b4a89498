package store

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
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

// TestPostgresSchemaMatchesSQLite: a fresh ledger has the same tables on
// both engines, with the same columns in the same order, the same NOT
// NULL flags and the same primary keys (types differ by design). A
// primary key column counts as NOT NULL on both (SQLite's pragma leaves
// an INTEGER PRIMARY KEY unflagged). PostgreSQL's own gpusuite_schema
// (SQLite's user_version) and samples' month partitions are not the
// ledger's tables.
func TestPostgresSchemaMatchesSQLite(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/ledger.db"
	u := ledgerdb.NewPostgresDB(t)
	for _, o := range []Options{{Path: path}, {URL: u}} {
		s, err := Open(ctx, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	// Each row: table|column|notnull|position in the primary key (0: none).
	schema := func(rows []string) map[string][]string {
		out := map[string][]string{}
		for _, r := range rows {
			f := strings.Split(r, "|")
			if len(f) != 4 {
				t.Fatalf("schema row %q", r)
			}
			if f[3] != "0" {
				f[2] = "1"
			}
			out[f[0]] = append(out[f[0]], strings.Join(f[1:], " "))
		}
		return out
	}
	sq := schema(ledgerdb.Strings(t, path, `SELECT m.name, p.name, p."notnull", p.pk
 FROM sqlite_master m, pragma_table_info(m.name) p
 WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' ORDER BY m.name, p.cid`))
	pg := schema(ledgerdb.Strings(t, u, `SELECT c.table_name, c.column_name, CASE WHEN c.is_nullable = 'NO' THEN 1 ELSE 0 END,
 coalesce((SELECT k.ordinal_position FROM information_schema.table_constraints tc
  JOIN information_schema.key_column_usage k ON k.constraint_name = tc.constraint_name AND k.table_schema = tc.table_schema AND k.table_name = tc.table_name
  WHERE tc.constraint_type = 'PRIMARY KEY' AND tc.table_schema = c.table_schema AND tc.table_name = c.table_name AND k.column_name = c.column_name), 0)
 FROM information_schema.columns c JOIN pg_class r ON r.relname = c.table_name AND r.relnamespace = CAST(current_schema() AS regnamespace)
 WHERE c.table_schema = current_schema() AND r.relkind IN ('r', 'p') AND NOT r.relispartition AND c.table_name <> 'gpusuite_schema'
 ORDER BY c.table_name, c.ordinal_position`))
	if len(sq) == 0 {
		t.Fatal("no tables read from the SQLite ledger")
	}
	if d := cmp.Diff(sq, pg); d != "" {
		t.Errorf("schemas differ between engines (-sqlite +postgres):\n%s", d)
	}
}
