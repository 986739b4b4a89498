package hook

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Slurm counts a requeue before the requeued run's epilog runs: that epilog
// sees the next run's SLURM_JOB_RESTART_COUNT. So the prolog leaves a mark
// of the run it recorded, and the epilog records the run whose mark it
// finds. The marks live in a subdirectory of the spool: node-local and
// root-only like it, and never shipped (the shipper and the agent read
// only the spool's own files). The errors and logs still say "run note",
// as they did before the name changed: what the hooks print stays.
const RunMarksDir = "runs"

// runMarkMaxAge is how long a mark counts. A mark outlives its job only
// when the epilog did not run (the node died, the hook was killed); an
// older one is another job's under a reused id, is ignored and is swept.
// A job running longer than this that is then requeued has its end
// recorded under the count its epilog sees, as without marks.
const runMarkMaxAge = 30 * 24 * time.Hour

// runMarkSweepMax bounds one sweep; the rest waits for the next sweep.
const runMarkSweepMax = 1000

// An epilog sweeps at most once per runMarkSweepEvery, as the mtime of
// the file runMarkSwept in the marks directory says: stale marks are rare
// (an epilog that never ran), and a sweep costs the epilog a stat per mark
// present, one per job running on the node.
const (
	runMarkSweepEvery = 24 * time.Hour
	runMarkSwept      = ".swept"
)

// runMarks is the marks directory of one spool.
type runMarks struct {
	dir string
	now func() time.Time
}

func marksOf(spoolDir string, now func() time.Time) runMarks {
	return runMarks{dir: filepath.Join(spoolDir, RunMarksDir), now: now}
}

// name is a run's mark: one empty file whose existence is the mark, so the
// epilog reads nothing but a stat.
func (m runMarks) name(cluster string, job uint64, restart int, node string) string {
	return fmt.Sprintf("run.%s.%d.%d.%s", cluster, job, restart, node)
}

// mark says that the prolog recorded this run on this node.
func (m runMarks) mark(cluster string, job uint64, restart int, node string) error {
	// An empty file is never half-written, and needs no fsync: after a
	// crash of the node the run's epilog does not run there anyway. Its
	// mtime is the hook's clock's, on which its age is measured: opening
	// it with O_TRUNC sets it to the system's clock, even on an old mark
	// of a reused job id, and only a hook clock a second or more away
	// (the simulations') costs one more update. The directory is made
	// only when it is missing, not tried on every job.
	path := filepath.Join(m.dir, m.name(cluster, job, restart, node))
	err := m.touch(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err := os.Mkdir(m.dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create run notes %q: %w", m.dir, err)
		}
		err = m.touch(path)
	}
	if err != nil {
		return fmt.Errorf("note run: %w", err)
	}
	return nil
}

// touch makes path an empty file whose mtime is the hook's clock's.
func (m runMarks) touch(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close %q: %w", path, err)
	}
	if now := m.now(); time.Until(now).Abs() >= time.Second {
		return os.Chtimes(path, now, now)
	}
	return nil
}

// runOf is the run an epilog that sees restart records: restart if its
// prolog marked it, else restart-1 if that was marked (the requeue was
// counted first), else restart (no prolog mark: as without marks). It
// returns the mark it used, for forget; an earlier run's mark left
// behind (its epilog never ran) is the sweep's.
func (m runMarks) runOf(cluster string, job uint64, restart int, node string) (run int, marked []string) {
	for _, r := range []int{restart, restart - 1} {
		if r < 0 {
			continue
		}
		if name := m.name(cluster, job, r, node); m.fresh(name) {
			return r, []string{name}
		}
	}
	return restart, nil
}

// fresh reports whether the mark exists and is young enough to be this
// job's.
func (m runMarks) fresh(name string) bool {
	st, err := os.Lstat(filepath.Join(m.dir, name))
	return err == nil && st.Mode().IsRegular() && m.now().Sub(st.ModTime()) < runMarkMaxAge
}

// forget removes the marks an epilog consulted, then sweeps marks older
// than runMarkMaxAge, runMarkSweepMax at most.
func (m runMarks) forget(names []string) error {
	var first error
	for _, name := range names {
		if err := os.Remove(filepath.Join(m.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) && first == nil {
			first = fmt.Errorf("remove run note: %w", err)
		}
	}
	if err := m.sweep(); err != nil && first == nil {
		first = err
	}
	return first
}

func (m runMarks) sweep() error {
	swept := filepath.Join(m.dir, runMarkSwept)
	if st, err := os.Lstat(swept); err == nil && m.now().Sub(st.ModTime()) < runMarkSweepEvery {
		return nil
	}
	if err := m.touch(swept); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("sweep run notes: %w", err)
	}
	d, err := os.Open(m.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("open run notes %q: %w", m.dir, err)
	}
	defer d.Close()
	ents, err := d.ReadDir(runMarkSweepMax)
	if err != nil && len(ents) == 0 {
		if errors.Is(err, io.EOF) {
			return nil
		}
		return fmt.Errorf("list run notes %q: %w", m.dir, err)
	}
	now := m.now()
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		info, err := e.Info()
		if err != nil || now.Sub(info.ModTime()) < runMarkMaxAge {
			continue
		}
		if err := os.Remove(filepath.Join(m.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("sweep run note: %w", err)
		}
	}
	return nil
}
