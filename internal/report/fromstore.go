package report

import "github.com/aicloud/gpusuite/internal/store"

// JobRowFrom is the store's job row as reports list it, for a reader of
// the store's own job reads (the dashboard's running jobs).
func JobRowFrom(r *store.JobRow) JobRow { return jobRow(r) }
