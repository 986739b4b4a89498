package report

import "github.com/aicloud/gpusuite/internal/store"

// JobRowFrom is the store's job row as reports list it, for a reader of
// the store's own job reads (the dashboard's running jobs).
func JobRowFrom(r *store.JobRow) JobRow { return jobRow(r) }

// Store is the ledger d reads, for a reader with reads of its own (the
// dashboard's running jobs and nodes) that should share d's pool rather
// than open a second one. It stays d's: d.Close closes it.
func (d *DB) Store() *store.Store { return d.st }
