package reportcmd

import (
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
)

// The ledger fixtures are shared with internal/report's tests.
type fxJob = reportfixture.Job

var (
	t0          = reportfixture.T0
	buildLedger = reportfixture.BuildLedger
	randomJobs  = reportfixture.RandomJobs
)
