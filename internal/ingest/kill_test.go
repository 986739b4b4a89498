package ingest

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/sim/gendata"
)

// TestMain lets the test binary stand in for gpuacct: with
// GPUSUITE_TEST_GPUACCT set it runs the CLI on os.Args and exits. With
// GPUSUITE_TEST_KILL_AT too ("commit:3,housekeeping:1") it SIGKILLs itself
// at the 3rd batch commit or the 1st housekeeping, whichever comes first.
func TestMain(m *testing.M) {
	if os.Getenv("GPUSUITE_TEST_GPUACCT") == "1" {
		if spec := os.Getenv("GPUSUITE_TEST_KILL_AT"); spec != "" {
			testPoint = killAt(spec)
		}
		os.Exit(runCLI(context.Background(), os.Args, os.Stdout, os.Stderr, os.Getenv))
	}
	os.Exit(m.Run())
}

// killAt makes a testPoint that kills the process at the n-th time a
// named point is reached, for each "point:n" of spec.
func killAt(spec string) func(string) {
	at := map[string]int64{}
	for _, kv := range strings.Split(spec, ",") {
		name, n, _ := strings.Cut(kv, ":")
		v, err := strconv.ParseInt(n, 10, 64)
		if err != nil || v < 1 {
			panic("GPUSUITE_TEST_KILL_AT: want point:n,... with n >= 1, got " + spec)
		}
		at[name] = v
	}
	var mu sync.Mutex
	seen := map[string]int64{}
	return func(point string) {
		mu.Lock()
		seen[point]++
		hit := seen[point] == at[point]
		mu.Unlock()
		if hit {
			fmt.Fprintf(os.Stderr, "killed at %s %d\n", point, at[point])
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // the signal is on its way
		}
	}
}

// runCLI is `gpuacct --config FILE ingest --db ... --incoming ...
// --quarantine ... --archive ... --sacct ...` with the standard library's
// flags: the command line itself is gpuacct's (gpuacct/ingestcmd).
func runCLI(ctx context.Context, args []string, stdout, stderr *os.File, getenv func(string) string) int {
	top := flag.NewFlagSet("gpuacct", flag.ContinueOnError)
	cfgPath := top.String("config", "", "")
	if err := top.Parse(args[1:]); err != nil || top.Arg(0) != "ingest" {
		fmt.Fprintf(stderr, "gpuacct: want --config FILE ingest [options], got %q\n", args[1:])
		return 2
	}
	cfg, err := config.Load(*cfgPath, true)
	if err != nil {
		fmt.Fprintf(stderr, "gpuacct: %v\n", err)
		return 1
	}
	fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
	fs.StringVar(&cfg.Store.Path, "db", cfg.Store.Path, "")
	fs.StringVar(&cfg.Ingest.Incoming, "incoming", cfg.Ingest.Incoming, "")
	fs.StringVar(&cfg.Ingest.Quarantine, "quarantine", cfg.Ingest.Quarantine, "")
	fs.StringVar(&cfg.Ingest.Archive, "archive", cfg.Ingest.Archive, "")
	fs.StringVar(&cfg.Ingest.Sacct, "sacct", cfg.Ingest.Sacct, "")
	if err := fs.Parse(top.Args()[1:]); err != nil {
		return 2
	}
	s, err := Open(ctx, cfg, stderr, getenv, "gpuacct-ingest")
	if err == nil {
		err = s.Once(ctx, stdout)
		s.Close()
	}
	if err != nil {
		fmt.Fprintf(stderr, "gpuacct: %v\n", err)
		return 1
	}
	return 0
}

// TestKillDuringIngest SIGKILLs `gpuacct ingest` at chosen points of a
// pass (inside a batch's transaction, between a commit and its files'
// archiving, between two archived files, inside housekeeping), run after
// run; the run that is not killed finishes the pass, and then the ledger
// equals the ground truth: what an uninterrupted ingest gives. It runs on
// the engine under test (store.url in the run's config on PostgreSQL),
// where each run starts as soon as the last one died: its writer lock,
// held by the killed process's session, must not refuse the next run
// (the store waits for a dead holder of this host to be let go).
func TestKillDuringIngest(t *testing.T) {
	e := newEnv(t)
	start := time.Now().UTC().Truncate(time.Hour).Add(-7 * time.Hour)
	truth, err := gendata.Generate(e.cfg.Ingest.Incoming, gendata.Options{Cluster: "c1", Nodes: 8, GPUsPerNode: 8, Start: start,
		Duration: 6 * time.Hour, Interval: 10 * time.Second, JobsPerNode: 30, HookEvents: true, Aggregates: true, Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"ingest", "--db", e.cfg.Store.Path, "--incoming", e.cfg.Ingest.Incoming,
		"--quarantine", e.cfg.Ingest.Quarantine, "--archive", e.cfg.Ingest.Archive, "--sacct", ""}
	cfgFile := filepath.Join(e.root, "gpusuite.toml")
	toml := "[ingest]\nbatch_records = 400\nkeep = \"archive\"\n"
	if e.cfg.Store.URL != "" {
		// PostgreSQL: a killed run's transaction and its writer lock
		// end with its session.
		toml += fmt.Sprintf("[store]\nurl = %q\n", e.cfg.Store.URL)
	}
	writeFile(t, cfgFile, []byte(toml))
	// Each run dies at the n-th time it reaches one kind of point; n
	// cycles 1, 6, 11, 16. Until one run has died in housekeeping, every run also
	// dies there: that is the run that got through the last file.
	points := []string{"next", "commit", "retired"}
	kills := map[string]int{}
	done := false
	for i := 0; i < 1000 && !done; i++ {
		point := points[i%len(points)]
		spec := fmt.Sprintf("%s:%d", point, 1+5*((i/len(points))%4))
		if kills["housekeeping"] == 0 {
			spec += ",housekeeping:1"
		}
		cmd := exec.Command(exe, append([]string{"--config", cfgFile}, args...)...)
		cmd.Env = append(os.Environ(), "GPUSUITE_TEST_GPUACCT=1", "GPUSUITE_TEST_KILL_AT="+spec)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		switch {
		case err == nil:
			done = true
		case errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signal() == syscall.SIGKILL:
			var at string
			var n int
			if _, err := fmt.Sscanf(stderr.String(), "killed at %s %d", &at, &n); err != nil {
				t.Fatalf("run %d (%s) died of SIGKILL without saying where: %q", i, spec, stderr.String())
			}
			kills[at]++
		default:
			t.Fatalf("ingest run %d (%s): %v\n%s", i, spec, err, stderr.String())
		}
	}
	if !done {
		t.Fatalf("no pass finished after kills %v", kills)
	}
	t.Logf("SIGKILLs before a pass finished, by point: %v", kills)
	for _, p := range append(points, "housekeeping") {
		if kills[p] == 0 {
			t.Errorf("no run was killed at %q; the test proves little", p)
		}
	}
	s := e.open(t)
	defer s.Close()
	checkTruth(t, s, truth)
	left, _ := filepath.Glob(filepath.Join(e.cfg.Ingest.Incoming, "*", "*"))
	if len(left) != 0 {
		t.Errorf("%d files left in incoming", len(left))
	}
	if q, _ := os.ReadDir(e.cfg.Ingest.Quarantine); len(q) != 0 {
		t.Errorf("killed passes quarantined files")
	}
}
