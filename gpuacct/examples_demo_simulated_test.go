//go:build simulated

package main

// The demo's examples simulate a cluster for weeks (8 s to minutes on two
// cores) and serve its live board until stopped: TestDemo runs a small
// demo, internal/demo's tests serve one.
var (
	demoMarks = map[string]string{
		"gpuacct demo                        # the whole pipeline on simulated data": "two simulated weeks of 4 nodes: 8 s on two cores (TestDemo runs one week of 2)",
		"gpuacct demo":                          "two simulated weeks of 4 nodes: 8 s on two cores (TestDemo runs one week of 2)",
		"gpuacct demo --dir /tmp/gpusuite-demo": "two simulated weeks of 4 nodes: 8 s on two cores (TestDemo runs one week of 2)",
		"gpuacct demo --weeks 4 --nodes 8 --gpus 8 --dir /tmp/gpusuite-demo":                        "a minute of simulation on two cores",
		"gpuacct demo --interval 10s --weeks 1     # the agent's production interval":               "half a minute of simulation on two cores",
		"gpuacct demo --start 2026-10-05 --weeks 5 # the same weeks on every run":                   "five simulated weeks (TestPostgresMigrateDemoReportsIdentical runs them on 2 nodes)",
		"gpuacct demo serve --dir /tmp/gpusuite-demo":                                               "a demo directory and a live simulated cluster until stopped (internal/demo's serve tests)",
		"gpuacct demo serve --dir /tmp/gpusuite-demo --listen 127.0.0.1:9000":                       "a demo directory and a live simulated cluster until stopped (internal/demo's serve tests)",
		"gpuacct demo serve --dir /tmp/gpusuite-demo --listen 0.0.0.0:8080   # others may look too": "a demo directory and a live simulated cluster until stopped (internal/demo's serve tests)",
	}
	demoRuns = map[string]exampleRun{}
)
