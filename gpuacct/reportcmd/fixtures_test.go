package reportcmd

import (
	"context"
	"fmt"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/store"
)

// The ledger fixtures are shared with internal/report's tests.
type fxJob = reportfixture.Job

var (
	t0          = reportfixture.T0
	buildLedger = reportfixture.BuildLedger
	randomJobs  = reportfixture.RandomJobs
)

// dbOpt is the option that points a command at the ledger at loc: --db
// for a SQLite file, --store-url for a PostgreSQL database.
func dbOpt(loc string) string {
	if store.IsPostgresURL(loc) {
		return "--store-url=" + loc
	}
	return "--db=" + loc
}

// openWriter opens the ledger at loc (a file or a URL) as its writer.
func openWriter(loc string) (*store.Ledger, error) {
	o := store.Options{Path: loc}
	if store.IsPostgresURL(loc) {
		o = store.Options{URL: loc}
	}
	return store.Open(context.Background(), o)
}

// storeKey is the [store] key that names the ledger at loc in a config
// file: url = "…" for a PostgreSQL database, else path = "…".
func storeKey(loc string) string {
	if store.IsPostgresURL(loc) {
		return fmt.Sprintf("url = %q\n", loc)
	}
	return fmt.Sprintf("path = %q\n", loc)
}
