package ingest

import (
	"bytes"
	"context"
	"errors"
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

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/cliwire"
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

// runCLI is gpuacct's main with only the ingest commands.
func runCLI(ctx context.Context, args []string, stdout, stderr *os.File, getenv func(string) string) int {
	var out, errw bytes.Buffer
	err := cliApp(&out, &errw, getenv).RunContext(ctx, args)
	stdout.Write(out.Bytes())
	stderr.Write(errw.Bytes())
	if err != nil {
		fmt.Fprintf(stderr, "gpuacct: %v\n", err)
		return 1
	}
	return 0
}

func cliApp(stdout, stderr *bytes.Buffer, getenv func(string) string) *cli.App {
	return &cli.App{
		Name:           "gpuacct",
		Flags:          []cli.Flag{cliwire.ConfigFlag()},
		Commands:       []*cli.Command{IngestCommand(stdout, stderr, getenv), ServeCommand(stdout, stderr, getenv)},
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// TestKillDuringIngest SIGKILLs `gpuacct ingest` at chosen points of a
// pass (inside a batch's transaction, between a commit and its files'
// archiving, between two archived files, inside housekeeping), run after
// run; the run that is not killed finishes the pass, and then the ledger
// equals the ground truth: what an uninterrupted ingest gives.
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
	writeFile(t, cfgFile, []byte("[ingest]\nbatch_records = 400\nkeep = \"archive\"\n"))
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

// TestCLIErrors: bad input gives one clear line and a non-zero exit.
func TestCLIErrors(t *testing.T) {
	e := newEnv(t)
	locked := e.open(t)
	defer locked.Close()
	badCfg := filepath.Join(e.root, "bad.toml")
	writeFile(t, badCfg, []byte("[store]\njournal_mode = \"fast\"\n"))
	unreadable := filepath.Join(e.root, "nope.toml")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"locked store", []string{"ingest", "--db", e.cfg.Store.Path}, "locked by another writer"},
		{"missing db directory", []string{"ingest", "--db", "/nonexistent/dir/acct.db"}, "open store \"/nonexistent/dir/acct.db\""},
		{"missing config", []string{"--config", unreadable, "ingest"}, "read config"},
		{"bad config value", []string{"--config", badCfg, "ingest"}, "store.journal_mode"},
		{"bad keep flag", []string{"ingest", "--keep", "shred", "--db", filepath.Join(e.root, "x.db")}, "ingest.keep"},
		{"relative db path", []string{"ingest", "--db", "acct.db"}, "not an absolute path"},
		{"unknown service user", []string{"ingest", "--service-user", "no-such-user-xyz", "--db", filepath.Join(e.root, "y.db")}, "service user"},
		{"missing incoming", []string{"ingest", "--db", filepath.Join(e.root, "z.db"), "--incoming", "/nonexistent/incoming"}, "incoming directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			err := cliApp(&out, &errw, func(string) string { return "" }).Run(append([]string{"gpuacct"}, tc.args...))
			if err == nil {
				t.Fatalf("no error; stdout %q", out.String())
			}
			if msg := err.Error(); !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, tc.want)
			}
		})
	}
}
