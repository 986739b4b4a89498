package ingest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/logging"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
)

// Setup is what `gpuacct ingest` and `gpuacct serve` share: the checked
// config, the logger, the open writer store and the ingester's deps.
type Setup struct {
	Config config.Config
	Log    *slog.Logger
	Store  *store.Ledger
	Deps   Deps
}

// Open checks cfg (flags already applied by the command line), opens the
// writer store and wires the ingester's dependencies. prog names the log
// lines ("gpuacct-serve"). A writer already holding the store makes it
// fail with store.ErrLocked.
func Open(ctx context.Context, cfg config.Config, stderr io.Writer, getenv func(string) string, prog string) (*Setup, error) {
	s, err := Prepare(cfg, stderr, getenv, prog)
	if err != nil {
		return nil, err
	}
	if err := s.OpenStore(ctx, Writer{}); err != nil {
		return nil, err
	}
	return s, nil
}

// Writer says how OpenStore takes the writer lock.
type Writer struct {
	// Wait waits (until ctx ends) for another writer to let go instead
	// of failing with store.ErrLocked.
	Wait bool
	// OnWait is told who holds the lock, once each time that changes.
	OnWait func(holder string)
}

// Prepare checks cfg and makes the logger and the ingester's
// dependencies, all but the store: a daemon that may wait for the writer
// lock logs, and serves /metrics, before it has the store.
func Prepare(cfg config.Config, stderr io.Writer, getenv func(string) string, prog string) (*Setup, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	level, err := logging.ParseLevel(cfg.Ingest.LogLevel)
	if err != nil {
		return nil, err
	}
	log := logging.New(prog, stderr, level, getenv)
	uid := os.Getuid()
	if cfg.Ingest.ServiceUser != "" {
		u, err := user.Lookup(cfg.Ingest.ServiceUser)
		if err != nil {
			return nil, fmt.Errorf("service user %q: %w", cfg.Ingest.ServiceUser, err)
		}
		uid, _ = strconv.Atoi(u.Uid)
	}
	var sacct, sacctmgr, scontrol Sacct
	if cfg.Ingest.Sacct != "" {
		// A site whose accounting is asked has a slurmctld to ask too.
		sacct, scontrol = slurmCommand(cfg.Ingest.Sacct), slurmCommand("scontrol")
	}
	if cfg.Ingest.Sacctmgr != "" {
		sacctmgr = slurmCommand(cfg.Ingest.Sacctmgr)
	}
	// One gate for both: they ask the same slurmdbd.
	gate := newSlurmGate(time.Now)
	sacct, sacctmgr = gate.guard("sacct", sacct), gate.guard("sacctmgr", sacctmgr)
	return &Setup{Config: cfg, Log: log, Deps: Deps{
		Config: cfg, Log: log, Now: time.Now, UID: uid, Sacct: sacct, Sacctmgr: sacctmgr, Scontrol: scontrol,
	}}, nil
}

// OpenStore opens the writer store (store.url, else store.path) as w
// says.
func (s *Setup) OpenStore(ctx context.Context, w Writer) error {
	c := s.Config.Store
	st, err := store.Open(ctx, store.Options{Path: c.Path, URL: c.URL, Journal: c.JournalMode, BusyTimeout: c.BusyTimeout.Duration,
		Wait: w.Wait, OnWait: w.OnWait})
	if err != nil {
		return err
	}
	s.Store, s.Deps.Store = st, st
	return nil
}

// Close closes the store, if open.
func (s *Setup) Close() error {
	if s.Store == nil {
		return nil
	}
	return s.Store.Close()
}

// Once is `gpuacct ingest`: one pass, the requests applied, a summary
// line on stdout.
func (s *Setup) Once(ctx context.Context, stdout io.Writer) error {
	in := New(s.Deps)
	res, err := in.Pass(ctx)
	in.applyRequests(ctx)
	fmt.Fprintf(stdout, "files %d, records %d (new samples %d), duplicates %d, quarantined %d, refused %d, unfinished jobs closed %d, samples pruned %d\n",
		res.Files, res.Records, res.Samples, res.Duplicates, res.Quarantined, res.Refused, res.Closed, res.Pruned)
	if err != nil {
		return fmt.Errorf("ingest pass: %w", err)
	}
	return nil
}

// maxSlurmOutput bounds what one sacct or sacctmgr call may print: far
// above any batch ingest asks for (500 jobs, one account tree), far below
// what would hurt the ingest daemon.
const maxSlurmOutput = 64 << 20

// slurmCommand runs prog (sacct, sacctmgr) with args through
// slurmstate.Exec, as the board runs scontrol: standard output bounded at
// maxSlurmOutput, a failure named by the first line of standard error,
// and a return within a second of the context's end even where a child it
// left behind (a wrapper script without exec) still holds its output.
func slurmCommand(prog string) Sacct {
	run := slurmstate.Exec{MaxOutput: maxSlurmOutput}.Run
	return func(ctx context.Context, args ...string) ([]byte, error) {
		return run(ctx, prog, args...)
	}
}
