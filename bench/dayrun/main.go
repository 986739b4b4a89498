// Command dayrun is the store issue's "done when" (docs/performance.md,
// "simulated day through the real agent"): 16 simulated nodes × 8 GPUs
// ship a simulated day through the real agent and prolog/epilog code
// (internal/simcluster), one `gpuacct ingest` (the binary) takes it into
// a fresh database, and the totals read back through the report queries
// are compared with the ground truth. It prints the figures and exits
// non-zero when a total differs.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/bench/internal/footprint"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "dayrun:", err)
		os.Exit(exitcode.Failure)
	}
}

func run(args []string, w io.Writer) error {
	fs := flag.NewFlagSet("dayrun", flag.ContinueOnError)
	dir := fs.String("dir", "/var/tmp/gpusuite-dayrun", "incoming directory and database (the share), emptied first")
	nodeDir := fs.String("node-dir", "", "the simulated nodes' local spool and state (default: <dir>/nodes)")
	gpuacct := fs.String("gpuacct", "bin/gpuacct", "the gpuacct binary that ingests")
	nodes := fs.Int("nodes", 16, "simulated nodes")
	gpus := fs.Int("gpus", 8, "GPUs per node")
	hours := fs.Int("hours", 24, "simulated hours")
	jobs := fs.Int("jobs-per-node", 345, "about how many jobs each node runs")
	interval := fs.Duration("interval", 10*time.Second, "agent.interval")
	seed := fs.Int64("seed", 1, "random seed")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := os.RemoveAll(*dir); err != nil {
		return err
	}
	if *nodeDir == "" {
		*nodeDir = filepath.Join(*dir, "nodes")
	} else if err := os.RemoveAll(*nodeDir); err != nil {
		return err
	}
	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	if err := os.Chmod(*dir, 0o755); err != nil {
		return err
	}
	ctx := context.Background()
	// The day ends on the last whole hour, a little before now: ingest
	// refuses records from the future and prunes samples past retention.
	end := time.Now().UTC().Truncate(time.Hour)
	o := simcluster.Options{Cluster: "sim", Nodes: *nodes, GPUsPerNode: *gpus, Start: end.Add(-time.Duration(*hours) * time.Hour),
		Duration: time.Duration(*hours) * time.Hour, Interval: *interval, JobsPerNode: *jobs, FaultEvery: 6 * time.Hour, Seed: *seed,
		NodeRoot: *nodeDir, Incoming: filepath.Join(*dir, "incoming")}
	fmt.Fprintf(w, "simulating %d nodes × %d GPUs for %d h at %s on %d CPUs (node dirs %s, incoming %s)\n",
		o.Nodes, o.GPUsPerNode, *hours, o.Interval, runtime.GOMAXPROCS(0), *nodeDir, o.Incoming)
	t0 := time.Now()
	cpu0 := cpuTime()
	res, err := simcluster.Run(ctx, o)
	if err != nil {
		return err
	}
	simWall, simCPU := time.Since(t0), cpuTime()-cpu0
	truth := res.Truth
	files, bytes, err := footprint.Dir(o.Incoming)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "simulation: %s wall, %s CPU: %d jobs, %d samples (%d lost), %d counter resets; shipped %d files, %.0f MiB\n",
		simWall.Round(time.Millisecond), simCPU.Round(time.Millisecond), len(truth.Jobs), truth.Samples, truth.LostSamples, truth.Resets,
		files, float64(bytes)/(1<<20))

	db := filepath.Join(*dir, "gpuacct.db")
	cmd := exec.CommandContext(ctx, *gpuacct, "ingest", "--db", db, "--incoming", o.Incoming,
		"--quarantine", filepath.Join(*dir, "quarantine"), "--archive", filepath.Join(*dir, "archive"), "--keep", "delete", "--sacct", "")
	cmd.Stdout, cmd.Stderr = w, os.Stderr
	fmt.Fprintf(w, "$ %s\n", cmd.String())
	t0 = time.Now()
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("gpuacct ingest: %w", err)
	}
	ingestWall := time.Since(t0)
	st, err := os.Stat(db)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "ingest: %s wall (%.0f samples/s), DB %.1f MiB\n", ingestWall.Round(time.Millisecond),
		float64(truth.Samples)/ingestWall.Seconds(), float64(st.Size())/(1<<20))
	return compare(ctx, w, db, truth)
}

// compare reads the cluster's and every team's totals through the report
// queries and holds them to the truth: allocation, jobs, sample and idle
// seconds and energy exactly, used GPU-seconds to 10⁻⁹ (float sums in
// another order).
func compare(ctx context.Context, w io.Writer, path string, truth simcluster.Truth) error {
	db, err := report.OpenDB(ctx, path, time.Second)
	if err != nil {
		return err
	}
	defer db.Close()
	got := map[string]report.Usage{}
	var total report.Usage
	win := timespec.Window{Start: truth.Start, End: truth.End}
	if err := db.Facts(ctx, timespec.Buckets(win, timespec.None), report.Filter{}, false, func(f *report.Fact) {
		u := got[f.Account]
		u.Add(f.Usage)
		got[f.Account] = u
		total.Add(f.Usage)
	}); err != nil {
		return err
	}
	bad := 0
	check := func(name string, have report.Usage, want simcluster.Usage) {
		same := have.AllocS == want.AllocS && have.Jobs == want.Jobs && have.SampleS == want.SampleS && have.IdleS == want.IdleS &&
			have.EnergyMJ == want.EnergyMJ && math.Abs(have.UsedS-want.UsedS) <= 1e-9*math.Max(1, want.UsedS)
		mark := "equal"
		if !same {
			mark = "DIFFERENT"
			bad++
		}
		fmt.Fprintf(w, "%-9s jobs %5d/%-5d alloc %9d/%-9d GPU-s  used %12.1f/%-12.1f  idle %9.0f/%-9.0f  energy %14d/%-14d mJ  %s\n",
			name, have.Jobs, want.Jobs, have.AllocS, want.AllocS, have.UsedS, want.UsedS, have.IdleS, want.IdleS, have.EnergyMJ, want.EnergyMJ, mark)
	}
	fmt.Fprintln(w, "ledger (report queries) / ground truth:")
	for _, a := range sortedKeys(truth.ByAccount) {
		check(a, got[a], truth.ByAccount[a])
	}
	check("cluster", total, truth.Total)
	if len(got) != len(truth.ByAccount) {
		bad++
		fmt.Fprintf(w, "accounts in the ledger: %d, simulated: %d\n", len(got), len(truth.ByAccount))
	}
	if bad > 0 {
		return fmt.Errorf("%d totals differ from the ground truth", bad)
	}
	fmt.Fprintln(w, "all totals equal the ground truth")
	return nil
}

func sortedKeys(m map[string]simcluster.Usage) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// cpuTime is the process's user + system CPU time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
