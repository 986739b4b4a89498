package report

import "testing"

// What the tests outside the package (ledger_test.go) use.

// NewTestDeps is testDeps.
var NewTestDeps = testDeps

// ExportColumns are the export kinds' columns.
var ExportColumns = exportColumns

// RunCLI runs one gpuacct command line against the report commands.
func RunCLI(t testing.TB, d Deps, args ...string) error { return run(t, d, args...) }
