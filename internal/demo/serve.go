package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest"
	"github.com/aicloud/gpusuite/internal/notes"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/web"
)

// shutdownWait bounds how long the dashboard's open requests are waited
// for when the demo ends.
const shutdownWait = 5 * time.Second

// ingestInterval is the longest time between two ingest passes of demo
// serve; files arriving wake a pass sooner (ingest.watch).
const ingestInterval = 5 * time.Second

// lastPassWait bounds the pass that ingests the last jobs' ends.
const lastPassWait = time.Minute

// ServeOptions configure Serve.
type ServeOptions struct {
	// Dir is a directory `gpuacct demo` made.
	Dir string
	// Listen is host:port; its checks are the command line's.
	Listen string
	// WorkRoot is where the nodes' local disks go (a directory of their
	// own inside, removed at the end); default /dev/shm when there is one,
	// else the temp directory.
	WorkRoot string
	// Now is the clock; nil: time.Now.
	Now func() time.Time
	// Log receives the agents', hooks' and dashboard's complaints; nil
	// discards them.
	Log *slog.Logger
	// Ready, when set, is called with the address served once the board
	// shows the live cluster (tests).
	Ready func(addr string)
}

// Serve serves the dashboard over Dir's ledger with the live board of
// Dir/live, and keeps both alive: the demo's nodes run the real agent on
// simulated GPUs, the real prolog and epilog start and end jobs of the
// demo's users, a synthetic Slurm view says what is partitioned, drained
// and reserved, and the real ingest (gpuacct serve's loop) takes what the
// nodes ship into the ledger as it arrives, so that every job on the
// board is in the ledger within a pass. When ctx ends, the jobs still
// running end, and a last pass ingests them. It removes nothing of Dir.
func Serve(ctx context.Context, stdout io.Writer, o ServeOptions) error {
	in, err := ReadInfo(o.Dir)
	if err != nil {
		return fmt.Errorf("demo serve: %w", err)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if o.WorkRoot = workRoot(o.WorkRoot); o.WorkRoot == "" {
		o.WorkRoot = os.TempDir()
	}
	work, err := os.MkdirTemp(o.WorkRoot, "gpusuite-demo-live-")
	if err != nil {
		return fmt.Errorf("demo serve: make the nodes' directory: %w", err)
	}
	defer os.RemoveAll(work)
	liveDir := filepath.Join(o.Dir, LiveDirName)
	unlock, err := lockLive(liveDir)
	if err != nil {
		return err
	}
	defer unlock()
	db := filepath.Join(o.Dir, dbFile)
	// Ingest's writer connection: the one writer of the ledger.
	wst, err := store.Open(ctx, store.Options{Path: db, BusyTimeout: time.Second})
	if err != nil {
		return fmt.Errorf("demo serve: open the ledger %q to ingest into it (is a gpuacct serve or ingest writing it?): %w", db, err)
	}
	defer wst.Close()
	if in.NextJob, err = nextJobID(ctx, wst, in.Cluster, in.NextJob); err != nil {
		return fmt.Errorf("demo serve: %w", err)
	}
	since := in.Start
	if since.IsZero() {
		since = o.Now()
	}
	// The board's Slurm views go to DIR/slurm.json as well, for gpuacct
	// free and status --slurm-file.
	live, err := NewLive(LiveOptions{Info: in, LiveDir: liveDir, WorkDir: work, Now: o.Now, Log: o.Log, SlurmFile: SlurmFile(o.Dir)})
	if err != nil {
		return err
	}
	icfg := ingestConfig(o.Dir, filepath.Join(work, "incoming"), in.Cluster, LiveInterval)
	icfg.Ingest.Interval = config.Dur(ingestInterval)
	icfg.Ingest.Watch = true
	icfg.Ingest.MetricsListen = ""
	ing := ingester(wst, icfg, in, since, o.Now, o.Log)
	isrv := ingest.NewServer(ing, icfg, prometheus.NewRegistry(), o.Log, func(string) string { return "" })
	st, err := store.Open(ctx, store.Options{Path: db, ReadOnly: true, BusyTimeout: time.Second})
	if err != nil {
		return fmt.Errorf("demo serve: open the ledger %q: %w", db, err)
	}
	defer st.Close()
	src := board.NewSource(board.SourceOptions{LiveDir: liveDir, Cluster: in.Cluster, Slurm: live.Slurm, SlurmInterval: LiveInterval,
		SlurmTimeout: time.Second, Notes: notes.InForce(st), Now: o.Now, Log: o.Log})
	h, err := web.New(web.Options{DB: db, BusyTimeout: time.Second, Location: time.UTC, Board: src,
		BoardRefresh: 10 * time.Second, Now: o.Now, Log: o.Log})
	if err != nil {
		return fmt.Errorf("demo serve: %w", err)
	}
	defer h.Close()
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("demo serve: listen on %s (is another demo serving? pick another port with --listen): %w", o.Listen, err)
	}
	srv := web.NewServer(h, 0)

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	// Ingest outlives ctx until the nodes have shipped their last
	// records (the jobs ended at the end): then one last pass.
	ictx, stopIngest := context.WithCancel(context.WithoutCancel(ctx))
	defer stopIngest()
	ingested := make(chan error, 1)
	go func() { ingested <- isrv.Run(ictx) }()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	go src.Run(ctx)
	addr := ln.Addr().String()
	dir := o.Dir
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs // the printed command runs from any directory
	}
	lived := make(chan error, 1)
	go func() {
		// The agents' first samples come a build interval after the
		// build's last ones (Info.LiveUntil), which ingest would refuse
		// as overlapping when serve follows the build at once.
		if wait := time.Until(in.LiveUntil.Add(leaveInterval)); wait > 0 {
			select {
			case <-time.After(wait):
			case <-ctx.Done():
			}
		}
		lived <- live.Run(ctx, func() {
			fmt.Fprintf(stdout, "The board of simulated cluster %q (%d nodes × %d GPUs) is served at http://%s/\n"+
				"Jobs start and end every half minute and are ingested into %s as they do.\n"+
				"In a terminal, the same free GPUs: gpuacct free %s\nCtrl-C ends it.\n",
				in.Cluster, in.Nodes, in.GPUs, addr, db, CLIFlags(dir))
			if o.Ready != nil {
				o.Ready(addr)
			}
		})
	}()
	var runErr error
	select {
	case <-ctx.Done():
	case err := <-served:
		runErr = fmt.Errorf("demo serve: %w", err)
	case err := <-lived:
		lived <- err
		if err != nil {
			runErr = err
		}
	case err := <-ingested:
		ingested <- err
		if err != nil {
			runErr = fmt.Errorf("demo serve: ingest: %w", err)
		}
	}
	stop()
	h.EndStreams()
	sctx, cancel := context.WithTimeout(context.Background(), shutdownWait)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) && runErr == nil {
		runErr = fmt.Errorf("demo serve: stop serving: %w", err)
	}
	if err := <-lived; err != nil && runErr == nil {
		runErr = err
	}
	stopIngest()
	if err := <-ingested; err != nil && runErr == nil {
		runErr = fmt.Errorf("demo serve: ingest: %w", err)
	}
	pctx, cancel := context.WithTimeout(context.Background(), lastPassWait)
	defer cancel()
	if _, err := ing.Pass(pctx); err != nil && runErr == nil {
		runErr = fmt.Errorf("demo serve: the last ingest pass: %w", err)
	}
	return runErr
}
