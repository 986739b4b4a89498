package reportcmd

import (
	"context"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
)

// The ledger fixtures are shared with internal/report's tests.
type fxJob = reportfixture.Job

var (
	t0          = reportfixture.T0
	buildLedger = reportfixture.BuildLedger
	randomJobs  = reportfixture.RandomJobs
)

func openTest(t *testing.T, path string) *report.DB {
	t.Helper()
	db, err := report.OpenDB(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}
