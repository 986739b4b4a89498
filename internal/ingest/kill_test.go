package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest/gendata"
)

// TestMain lets the test binary stand in for gpuacct: with
// GPUSUITE_TEST_GPUACCT set it runs the CLI on os.Args and exits.
func TestMain(m *testing.M) {
	if os.Getenv("GPUSUITE_TEST_GPUACCT") == "1" {
		os.Exit(runCLI(context.Background(), os.Args, os.Stdout, os.Stderr, os.Getenv))
	}
	os.Exit(m.Run())
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
		Flags:          []cli.Flag{config.Flag()},
		Commands:       []*cli.Command{IngestCommand(stdout, stderr, getenv), ServeCommand(stdout, stderr, getenv)},
		Writer:         stdout,
		ErrWriter:      stderr,
		ExitErrHandler: func(*cli.Context, error) {},
	}
}

// TestKillDuringIngest SIGKILLs `gpuacct ingest` at random moments, again
// and again; after the restarts the ledger equals the ground truth.
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
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	kills, done := 0, false
	for i := 0; i < 300 && !done; i++ {
		cmd := exec.Command(exe, append([]string{"--config", cfgFile}, args...)...)
		cmd.Env = append(os.Environ(), "GPUSUITE_TEST_GPUACCT=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		// Early kills land at open and in the first batches; later ones
		// (some at open, most inside a batch or between commit and archive).
		// The windows are short enough that a fast (optimised) build still
		// takes well over 15 kills to get through the data.
		delay := time.Duration(5+rng.Intn(70)) * time.Millisecond
		select {
		case err := <-exited:
			if err != nil {
				t.Fatalf("ingest run %d failed: %v\n%s", i, err, stderr.String())
			}
			done = true
		case <-time.After(delay):
			_ = cmd.Process.Signal(syscall.SIGKILL)
			err := <-exited
			var ee *exec.ExitError
			if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
				kills++
			} else if err == nil {
				done = true
			} else {
				t.Fatalf("ingest run %d: %v\n%s", i, err, stderr.String())
			}
		}
	}
	if !done {
		t.Fatalf("no pass finished after %d kills", kills)
	}
	if kills < 15 {
		t.Errorf("only %d kills landed; the test proves little", kills)
	}
	t.Logf("%d SIGKILLs before a pass finished", kills)
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
