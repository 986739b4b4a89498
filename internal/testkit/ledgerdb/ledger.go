package ledgerdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The environment that picks the tests' engine: GPUSUITE_TEST_ENGINE is
// sqlite (the default) or postgres; postgres needs GPUSUITE_TEST_PG, the
// URL of a server's maintenance database on which tests may make and drop
// databases (make test starts one: test/pg/harness.sh).
const (
	EnvEngine = "GPUSUITE_TEST_ENGINE"
	EnvPG     = "GPUSUITE_TEST_PG"
)

// Ledger is where a test's ledger lives: Path for SQLite, URL for
// PostgreSQL (then Path is empty).
type Ledger struct {
	Path, URL string
}

// Loc is the ledger's location for this package's helpers.
func (l Ledger) Loc() string {
	if l.URL != "" {
		return l.URL
	}
	return l.Path
}

// Engine is the engine the tests run on.
func Engine(t testing.TB) string {
	t.Helper()
	switch e := os.Getenv(EnvEngine); e {
	case "", "sqlite":
		return "sqlite"
	case "postgres":
		return e
	default:
		t.Fatalf("%s=%q: want sqlite or postgres", EnvEngine, e)
		return ""
	}
}

// NewLedger is a new, empty place for a ledger on the engine under test:
// a file name under t.TempDir(), or a database of its own on the
// PostgreSQL server, dropped when the test ends.
func NewLedger(t testing.TB) Ledger {
	t.Helper()
	if Engine(t) == "sqlite" {
		return Ledger{Path: filepath.Join(t.TempDir(), "ledger.db")}
	}
	return Ledger{URL: NewPostgresDB(t)}
}

// NewPostgresDB makes an empty database on the test server for t and
// returns its URL; it is dropped (connections and all) when t ends.
func NewPostgresDB(t testing.TB) string {
	t.Helper()
	admin := os.Getenv(EnvPG)
	if admin == "" {
		t.Fatalf("%s is not set: the PostgreSQL tests need a server (make test starts one with test/pg/harness.sh, or set it to a postgres:// URL whose user may create databases)", EnvPG)
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	name := "t_" + hex.EncodeToString(b[:]) + "_" + sanitize(t.Name())
	if len(name) > 60 {
		name = name[:60]
	}
	db, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatalf("open %s: %v", EnvPG, err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, `CREATE DATABASE "`+name+`" TEMPLATE template0 ENCODING 'UTF8'`); err != nil {
		t.Fatalf("create test database %s: %v", name, err)
	}
	t.Cleanup(func() {
		db, err := sql.Open("pgx", admin)
		if err != nil {
			t.Errorf("drop test database %s: %v", name, err)
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if _, err := db.ExecContext(ctx, `DROP DATABASE IF EXISTS "`+name+`" WITH (FORCE)`); err != nil {
			t.Errorf("drop test database %s: %v", name, err)
		}
	})
	u, err := url.Parse(admin)
	if err != nil {
		t.Fatalf("%s %q: %v", EnvPG, admin, err)
	}
	u.Path = "/" + name
	return u.String()
}

func sanitize(s string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(s) {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func isURL(loc string) bool {
	return strings.HasPrefix(loc, "postgres://") || strings.HasPrefix(loc, "postgresql://")
}
