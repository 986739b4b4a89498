//go:build !simulated

package main

// A production gpuacct has no demo: its one demo example says how to run
// one.
var (
	demoMarks = map[string]string{}
	demoRuns  = map[string]exampleRun{
		"gpuacct demo                        # the whole pipeline on simulated data": {code: 1, want: "run `make demo`"},
	}
)
