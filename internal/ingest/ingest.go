// Package ingest takes the records that nodes ship into
// <incoming>/<node>/ into the accounting store: validated, exactly once,
// in batched transactions, with bad files quarantined and planted ones
// refused (docs/store.md).
//
// Files:
//
//	ingest.go       the pass: list, read ahead, apply in batches, finish
//	pipeline.go     bounded read-ahead;  segread.go  streaming segment reads
//	validate.go     what a node may say: each record's bounds (events, segments,
//	                aggregates, GPU events), and what the ledger alone can tell
//	                (store.Rejected, store/write_checks.go) turned into quarantine or a wait
//	keys.go         record keys applied once, asked 500 at a time
//	careful.go      files the ledger knew, asked 500 at a time; a pass redone file by file
//	move.go         quarantine and cross-device moves
//	housekeeping.go unfinished jobs, open jobs' allocation, sample and archive retention
//	starts.go, details.go  estimated starts, sacct's details
//	reconcile.go    Slurm's times for finished jobs (sacctruns.go, sacctbatch.go)
//	slurmfacts.go   Slurm's facts besides jobs behind one gate (slurmgate.go):
//	                accounts.go (the account tree), clusterfacts*.go (capacity, events, reservations)
//	requests.go     the writer's request queue, applied in the pass
//	setup.go        what a pass needs, the sacct and sacctmgr bounds;  serve.go  the daemon's loop
//	writer.go       the writer lock lost;  metrics.go  the pass's metrics and hour checks
package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/spool"
	"github.com/aicloud/gpusuite/internal/store"
)

// Sacct runs sacct with args and returns its standard output.
type Sacct func(ctx context.Context, args ...string) ([]byte, error)

// Deps is what an Ingester takes from its surroundings.
type Deps struct {
	Store  *store.Ledger
	Config config.Config
	Log    *slog.Logger
	Now    func() time.Time
	// UID owns trusted files and directories (the service user).
	UID int
	// Sacct asks Slurm about unfinished jobs and job comments and array
	// ids; nil never asks.
	Sacct Sacct
	// Sacctmgr asks Slurm's accounting for its account tree, node events
	// and reservations (slurmfacts.go); nil never asks.
	Sacctmgr Sacct
	// Scontrol asks slurmctld for the partitions' billing weights
	// (billing.go); nil never asks.
	Scontrol Sacct
	// Metrics may be nil.
	Metrics *Metrics
	// SacctLocation is the time zone of sacct's times; nil means Local.
	SacctLocation *time.Location
}

// Ingester runs passes, one at a time.
type Ingester struct {
	d Deps
	// why files were left in incoming this pass: the first cause.
	leftMu  sync.Mutex
	leftErr error
	// deferred are the files this pass left for a later one on purpose
	// (rejected): not counted as left behind.
	deferred map[string]bool
	// careful: this pass sends each file's writes after the file
	// (careful.go); seen answers whether a file was ingested before, and
	// keys whether a record's key was applied (keys.go).
	careful bool
	seen    *seenFiles
	keys    *appliedKeys
	// jobIDs: the job row ids the pass's committed batches learned
	jobIDs *store.JobIDs
}

// New makes an Ingester.
func New(d Deps) *Ingester {
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.SacctLocation == nil {
		d.SacctLocation = time.Local
	}
	return &Ingester{d: d}
}

// Result is what one pass did.
type Result struct {
	Files, Records, Duplicates, Quarantined, Refused int
	// Samples counts newly stored samples (duplicates excluded).
	Samples int
	// Closed counts unfinished jobs closed (from sacct or estimated).
	Closed int
	Pruned int64
	// Deferred counts files left in incoming for a later pass: they name
	// a job with no event from their node yet.
	Deferred int
	// Left counts the files the pass listed and left in incoming: it could
	// not archive, delete, quarantine or read them. OldestLeft is the
	// oldest one's modification time.
	Left       int
	OldestLeft time.Time
}

type file struct {
	node, name, path string
	kind             int // ordering: events, GPU events, aggregates, segments
}

func kindOf(name string) int {
	switch record.KindOfFile(name) {
	case record.FileEvent:
		return 0
	case record.FileGPUEvent:
		return 1
	case record.FileJobGPU:
		return 2
	default:
		return 3
	}
}

// ErrStopped means the pass was cut short by the context.
var ErrStopped = errors.New("ingest stopped")

// Pass ingests every file present now, then closes stale jobs, extends
// open ones and prunes old samples and archives. It stops at the first
// store error (disk full, I/O): committed batches stay, the rest waits
// for the next pass.
func (in *Ingester) Pass(ctx context.Context) (Result, error) {
	res, err := in.pass(ctx, false, Result{})
	if r, ok := asRedo(err); ok && ctx.Err() == nil {
		in.d.Log.Warn("a write of the pass failed where its file is not known; doing the pass again file by file", "err", r.err)
		res, err = in.pass(ctx, true, carried(res))
	}
	return res, err
}

// pass is one pass; careful sends each file's writes after the file, and
// res starts from what an attempt before it did (carried).
func (in *Ingester) pass(ctx context.Context, careful bool, res Result) (Result, error) {
	in.careful = careful
	start := in.d.Now()
	in.leftMu.Lock()
	in.leftErr = nil
	in.leftMu.Unlock()
	in.deferred = map[string]bool{}
	files, refused, err := in.list(&res)
	if err != nil {
		return res, in.finish(ctx, start, res, err)
	}
	sort.SliceStable(files, func(i, j int) bool {
		if files[i].kind != files[j].kind {
			return files[i].kind < files[j].kind
		}
		if files[i].node != files[j].node {
			return files[i].node < files[j].node
		}
		return files[i].name < files[j].name
	})
	// Files are read, hashed, decoded and validated ahead of the writer
	// by a few goroutines; the writer takes them in order, one batched
	// transaction after the other, and retires committed files behind it.
	v := Validator{Now: start, MaxFuture: in.d.Config.Ingest.MaxFuture.Duration,
		MaxInterval: MaxSegmentInterval(in.d.Config.Agent.Interval.Duration)}
	in.seen = newSeenFiles(files)
	in.keys = newAppliedKeys(in.seen)
	in.jobIDs = store.NewJobIDs()
	src := in.prefetch(files, v)
	defer src.stop()
	ret := in.retirer()
	defer ret.wait()
	for !src.done() {
		if ctx.Err() != nil {
			return res, in.finish(ctx, start, res, ErrStopped)
		}
		if err := in.batch(ctx, src, ret, &res); err != nil {
			if _, ok := asRedo(err); ok {
				return res, err // done again, and recorded, by Pass
			}
			return res, in.finish(ctx, start, res, err)
		}
	}
	src.stop()
	ret.wait()
	if err := in.housekeeping(ctx, &res); err != nil {
		return res, in.finish(ctx, start, res, err)
	}
	// The weights before the runs sacct answers for: Slurm's billing of
	// a run counts where its partition had weights.
	in.fillBilling(ctx)
	in.fillDetails(ctx)
	in.slurmFacts(ctx)
	return res, in.finish(ctx, start, res, in.leftBehind(files, refused, &res))
}

// list finds the files to ingest. Directories that are not the service
// user's, or that others can write, have their files refused.
func (in *Ingester) list(res *Result) (out, refused []file, err error) {
	root := in.d.Config.Ingest.Incoming
	if err := in.trustedDir(root); err != nil {
		return nil, nil, fmt.Errorf("incoming directory: %w", err)
	}
	nodes, err := os.ReadDir(root)
	if err != nil {
		return nil, nil, fmt.Errorf("read incoming %q: %w", root, err)
	}
	for _, nd := range nodes {
		if strings.HasPrefix(nd.Name(), ".") {
			continue
		}
		dir := filepath.Join(root, nd.Name())
		st, err := os.Lstat(dir)
		if err != nil || !st.IsDir() {
			continue
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			in.d.Log.Warn("cannot read node directory", "dir", dir, "err", err)
			continue
		}
		dirErr := in.trustedDir(dir)
		if dirErr == nil && !nodeNameOK(nd.Name()) {
			dirErr = fmt.Errorf("%q is not a node name", nd.Name())
		}
		for _, e := range ents {
			name := e.Name()
			if strings.HasPrefix(name, ".") {
				continue // a temp file being written
			}
			f := file{node: nd.Name(), name: name, path: filepath.Join(dir, name), kind: kindOf(name)}
			if dirErr != nil {
				in.refuse(f.node, f.path, dirErr.Error(), res)
				refused = append(refused, f)
				continue
			}
			out = append(out, f)
		}
	}
	return out, refused, nil
}

func nodeNameOK(s string) bool { return nodeRE.MatchString(s) }

// trustedDir checks that dir is a directory of the service user that
// nobody else can write.
func (in *Ingester) trustedDir(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	sys := st.Sys().(*syscall.Stat_t)
	if int(sys.Uid) != in.d.UID {
		return fmt.Errorf("directory %s is owned by uid %d, not the service user (uid %d)", dir, sys.Uid, in.d.UID)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("directory %s is writable by group or others (mode %v)", dir, st.Mode().Perm())
	}
	return nil
}

func (in *Ingester) refuse(node, path, why string, res *Result) {
	res.Refused++
	in.d.Metrics.refused()
	in.d.Log.Warn("file refused", "node", node, "file", path, "reason", why)
	if err := in.quarantine(node, path, "refused: "+why); err != nil {
		in.d.Log.Error("cannot quarantine refused file", "file", path, "err", err)
	}
}

// open opens a file without following links and checks owner, type and
// size on the open descriptor.
func (in *Ingester) open(f file) (*os.File, int64, error) {
	fd, err := os.OpenFile(f.path, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, 0, &refused{"a symbolic link"}
		}
		return nil, 0, err
	}
	st, err := fd.Stat()
	if err == nil {
		err = in.trustedFile(st)
	}
	if err != nil {
		fd.Close()
		return nil, 0, err
	}
	return fd, st.Size(), nil
}

func (in *Ingester) trustedFile(st os.FileInfo) error {
	if !st.Mode().IsRegular() {
		return &refused{"not a regular file"}
	}
	sys := st.Sys().(*syscall.Stat_t)
	if int(sys.Uid) != in.d.UID {
		return &refused{fmt.Sprintf("owned by uid %d, not the service user (uid %d)", sys.Uid, in.d.UID)}
	}
	if st.Mode().Perm()&0o022 != 0 {
		return &refused{fmt.Sprintf("writable by group or others (mode %v)", st.Mode().Perm())}
	}
	if limit := in.d.Config.Ingest.MaxFileSize; st.Size() > limit {
		return &Bad{fmt.Sprintf("file of %d bytes is over the limit of %d (ingest.max_file_size)", st.Size(), limit)}
	}
	return nil
}

type refused struct{ why string }

func (r *refused) Error() string { return r.why }

// resourceError is a store error that is about the machine (disk full,
// I/O, locks), not the record: the pass stops and the file stays.
func resourceError(err error) bool {
	return errors.Is(err, store.ErrResource) || errors.Is(err, context.Canceled) ||
		errors.Is(err, context.DeadlineExceeded) || errors.Is(err, syscall.ENOSPC)
}

type done struct {
	f   file
	dup bool
}

// batch ingests files from src in one transaction, up to
// ingest.batch_records records.
func (in *Ingester) batch(ctx context.Context, src *prefetcher, ret *retirer, res *Result) error {
	now := in.d.Now()
	b, err := in.d.Store.Begin(ctx, now)
	if err != nil {
		return err
	}
	b.ShareJobIDs(in.jobIDs)
	// direct: a write's failure is known at its own file (careful.go)
	direct := in.careful || !b.Pipelined()
	var finished []done
	records := 0
	var pending Result
	var gpuEvents map[string]int
	for records < in.d.Config.Ingest.BatchRecords && !src.done() {
		l := src.next()
		f := l.f
		if l.readErr != nil {
			var r *refused
			var bd *Bad
			switch {
			case errors.As(l.readErr, &r):
				in.refuse(f.node, f.path, r.why, res)
			case errors.As(l.readErr, &bd):
				in.bad(f, bd.Reason, res)
			case errors.Is(l.readErr, fs.ErrNotExist):
				// gone since listed (another pass, an admin)
			default:
				in.d.Log.Warn("cannot read file; will retry", "file", f.path, "err", l.readErr)
			}
			continue
		}
		dup, err := in.seen.seen(b, f, l.hash)
		if err != nil {
			b.Rollback()
			return mayRedo(direct, err)
		}
		if dup {
			finished = append(finished, done{f, true})
			continue
		}
		if l.parseErr != nil {
			var bd *Bad
			if errors.As(l.parseErr, &bd) {
				in.bad(f, bd.Reason, res)
				continue
			}
			b.Rollback()
			return l.parseErr
		}
		p := l.p
		switch st, key, err := in.keys.state(b, f, p); {
		case err != nil:
			b.Rollback()
			return mayRedo(direct, err)
		case st == store.KeyApplied:
			finished = append(finished, done{f, true})
			continue
		case st == store.KeyConflict:
			in.bad(f, fmt.Sprintf("record %s was ingested before with other content; this copy is not applied", key), res)
			continue
		}
		n, err := in.apply(b, p)
		if rj := asRejected(err); rj != nil {
			// Refused before it wrote anything: the batch goes on.
			in.rejected(f, p, rj, now, res)
			continue
		}
		if err == nil && direct {
			// The file's queued writes reach the server now, so that
			// their failure is this file's.
			err = b.Flush()
		}
		if err != nil {
			b.Rollback()
			if !direct {
				// It may be an earlier file's write that failed.
				return mayRedo(false, fmt.Errorf("ingest %s: %w", f.path, err))
			}
			if !resourceError(err) {
				// Something in this file upsets the store: set it
				// aside so that the next pass is not stuck on it.
				in.bad(f, "store refused it: "+err.Error(), res)
			}
			return fmt.Errorf("ingest %s: %w", f.path, err)
		}
		if err := b.FileIngested(f.node, f.name, l.hash, l.size, p.Records()); err != nil {
			b.Rollback()
			return mayRedo(direct, err)
		}
		if err := in.keys.applied(b, p); err != nil {
			b.Rollback()
			return mayRedo(direct, err)
		}
		if p.GPUEvent != nil {
			if gpuEvents == nil {
				gpuEvents = map[string]int{}
			}
			gpuEvents[string(p.GPUEvent.Kind)]++
		}
		pending.Files++
		pending.Records += p.Records()
		pending.Samples += n
		records += p.Records()
		finished = append(finished, done{f, false})
	}
	if err := b.Commit(); err != nil {
		return mayRedo(direct, fmt.Errorf("ingest batch of %d files: %w", len(finished), err))
	}
	checkTouched(ctx, in.d.Store, b.TouchedHours(), in.d.Log, in.d.Metrics)
	res.Files += pending.Files
	res.Records += pending.Records
	res.Samples += pending.Samples
	in.d.Metrics.ingested(pending.Files, pending.Records)
	in.d.Metrics.gpuEventsIngested(gpuEvents)
	for _, d := range finished {
		if d.dup {
			res.Duplicates++
			in.d.Metrics.duplicate()
			in.d.Log.Debug("duplicate file: already ingested with the same content", "file", d.f.path)
		}
	}
	ret.retire(finished, now)
	return nil
}

func (in *Ingester) apply(b *store.Batch, p *Parsed) (int, error) {
	switch {
	case p.Event != nil:
		return 0, b.Event(p.Event)
	case p.GPUEvent != nil:
		return 0, b.GPUEvent(p.GPUEvent)
	case p.Header != nil:
		if err := b.CheckMIGParents(p.Header, p.Samples); err != nil {
			return 0, err
		}
		return b.Segment(p.Header, p.Samples)
	default:
		// All checked before any is written: a refused file leaves nothing.
		for i := range p.JobGPUs {
			if err := b.CheckJobGPU(&p.JobGPUs[i]); err != nil {
				return 0, err
			}
		}
		for i := range p.JobGPUs {
			if err := b.JobGPU(&p.JobGPUs[i]); err != nil {
				return 0, err
			}
		}
		return 0, nil
	}
}

func (in *Ingester) bad(f file, reason string, res *Result) {
	res.Quarantined++
	in.d.Metrics.quarantined()
	in.d.Log.Warn("file quarantined", "node", f.node, "file", f.path, "reason", reason)
	if err := in.quarantine(f.node, f.path, reason); err != nil {
		in.d.Log.Error("cannot quarantine file", "file", f.path, "err", err)
	}
}

// quarantine moves path to <quarantine>/<node>/ with a .reason beside it.
func (in *Ingester) quarantine(node, path, reason string) error {
	dir := filepath.Join(in.d.Config.Ingest.Quarantine, node)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return in.leave(fmt.Errorf("create quarantine %q: %w", dir, err))
	}
	dst, err := moveFile(path, dir, filepath.Base(path))
	if err != nil {
		return in.leave(fmt.Errorf("move %q to quarantine: %w", path, err))
	}
	note := fmt.Sprintf("%s\nfrom %s at %s\n", reason, path, in.d.Now().UTC().Format(time.RFC3339))
	if err := os.WriteFile(dst+".reason", []byte(note), 0o640); err != nil {
		return fmt.Errorf("write %s.reason: %w", dst, err)
	}
	return spool.SyncDir(dir)
}

// retire archives or deletes an ingested (committed) file.
func (in *Ingester) retire(f file, now time.Time) error {
	if in.d.Config.Ingest.Keep == "delete" {
		if err := os.Remove(f.path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return in.leave(err)
		}
		return nil
	}
	dir := filepath.Join(in.d.Config.Ingest.Archive, now.UTC().Format("2006-01-02"), f.node)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return in.leave(fmt.Errorf("create archive %q: %w", dir, err))
	}
	if _, err := moveFile(f.path, dir, f.name); err != nil {
		return in.leave(fmt.Errorf("archive %q: %w", f.path, err))
	}
	return nil
}

// recordPassWait is how long recording a pass may take beyond the
// store's busy timeout.
const recordPassWait = 5 * time.Second

// finish records the pass in the store and the metrics.
func (in *Ingester) finish(ctx context.Context, start time.Time, res Result, passErr error) error {
	end := in.d.Now()
	if err := in.d.Metrics.pass(context.WithoutCancel(ctx), in.d.Store, start, end, passErr); err != nil {
		in.d.Log.Warn("could not update the metrics", "err", err)
	}
	if passErr != nil && resourceError(passErr) && !errors.Is(passErr, context.Canceled) {
		// The store may be unwritable (disk full): try, but do not
		// replace the real error with this one.
		ctx = context.WithoutCancel(ctx)
	}
	msg := ""
	if passErr != nil {
		msg = passErr.Error()
	}
	// Recorded even after a cancel, but bounded: a server that takes
	// the connection and never answers must not stop serve's loop here,
	// out of its cancel's reach (the store waits out its busy timeout
	// first on SQLite).
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), in.d.Config.Store.BusyTimeout.Duration+recordPassWait)
	defer cancel()
	err := in.d.Store.RecordPass(rctx, store.Pass{
		Started: start, Finished: end, OK: passErr == nil,
		Files: res.Files, Records: res.Records, Quarantined: res.Quarantined, Refused: res.Refused,
		Error: msg, Left: res.Left, OldestLeft: res.OldestLeft,
	})
	if passErr != nil {
		return passErr
	}
	return err
}
