package report

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// maxScan bounds the directory entries gpuacct check reads in incoming
// and in quarantine together (invariant 9).
const maxScan = 200_000

// dirScan is what check found in a directory tree of <dir>/<node>/files.
type dirScan struct {
	files     int
	oldest    time.Time
	oldestAt  string
	old       int // files older than the cutoff
	truncated bool
}

// scanNodes counts the files in dir/<node>/ (not the .reason notes)
// and those last changed before cutoff; budget is shared and spent.
func scanNodes(dir string, cutoff time.Time, budget *int) (dirScan, error) {
	var s dirScan
	nodes, err := readDirBounded(dir, budget)
	if err != nil {
		return s, err
	}
	for _, n := range nodes {
		if !n.IsDir() {
			continue
		}
		sub := filepath.Join(dir, n.Name())
		ents, err := readDirBounded(sub, budget)
		if err != nil && !errors.Is(err, fs.ErrPermission) {
			return s, err
		}
		for _, e := range ents {
			if !e.Type().IsRegular() || strings.HasSuffix(e.Name(), ".reason") || strings.HasPrefix(e.Name(), ".") {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue // retired while we looked
			}
			s.files++
			if mt := info.ModTime(); !cutoff.IsZero() && mt.Before(cutoff) {
				s.old++
				if s.oldest.IsZero() || mt.Before(s.oldest) {
					s.oldest, s.oldestAt = mt, filepath.Join(sub, e.Name())
				}
			}
		}
		if *budget <= 0 {
			s.truncated = true
			break
		}
	}
	return s, nil
}

// readDirBounded reads at most *budget entries of dir.
func readDirBounded(dir string, budget *int) ([]os.DirEntry, error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []os.DirEntry
	for *budget > 0 {
		ents, err := f.ReadDir(min(*budget, 1024))
		out = append(out, ents...)
		*budget -= len(ents)
		if errors.Is(err, io.EOF) || len(ents) == 0 {
			break
		}
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// checkFiles adds what check finds in incoming and quarantine: files
// that outlived o.LeftPasses passes are a problem (ingest cannot retire
// them); the quarantine's and the recent passes' counts go into the
// summary.
func (d *DB) checkFiles(ctx context.Context, o CheckOptions) (problems []string, summary string, err error) {
	var parts []string
	// The start of the Nth most recent pass: a file older than that was
	// there for N passes and is still there.
	var cutoff time.Time
	if o.LeftPasses > 0 {
		var started sql.NullInt64
		err := d.db.QueryRowContext(ctx, `SELECT started FROM passes ORDER BY id DESC LIMIT 1 OFFSET ?`, o.LeftPasses-1).Scan(&started)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return nil, "", d.wrap(err)
		}
		if started.Valid {
			cutoff = time.Unix(started.Int64, 0)
		}
		// Ingest keeps a file whose job's event has not come yet for
		// ingest.grace before it quarantines it: not stuck before then.
		if g := o.Now.Add(-o.Grace); !cutoff.IsZero() && cutoff.After(g) {
			cutoff = g
		}
	}
	budget := maxScan
	if o.Incoming != "" && !cutoff.IsZero() {
		s, err := scanNodes(o.Incoming, cutoff, &budget)
		switch {
		case err != nil:
			parts = append(parts, fmt.Sprintf("incoming unreadable (%v)", firstLine(err.Error())))
		case s.old > 0:
			problems = append(problems, fmt.Sprintf("incoming: %d files outlived %d ingest passes (oldest %s, %s old): ingest cannot retire them; see gpuacct serve's log",
				s.old, o.LeftPasses, s.oldestAt, roundAge(o.Now.Sub(s.oldest))))
		}
	}
	// What the last pass recorded it left, for a check that cannot read
	// incoming itself.
	var left int64
	var oldestLeft sql.NullInt64
	err = d.db.QueryRowContext(ctx, `SELECT files_left, oldest_left FROM passes ORDER BY id DESC LIMIT 1`).Scan(&left, &oldestLeft)
	switch {
	case errors.Is(err, sql.ErrNoRows), err != nil && strings.Contains(err.Error(), "no such column"):
	case err != nil:
		return nil, "", d.wrap(err)
	case left > 0 && len(problems) == 0 && oldestLeft.Valid && !cutoff.IsZero() && time.Unix(oldestLeft.Int64, 0).Before(cutoff):
		problems = append(problems, fmt.Sprintf("incoming: the last ingest pass left %d files, the oldest from %s, older than %d passes: ingest cannot retire them; see gpuacct serve's log",
			left, time.Unix(oldestLeft.Int64, 0).UTC().Format(time.RFC3339), o.LeftPasses))
	}
	if o.Quarantine != "" {
		s, err := scanNodes(o.Quarantine, time.Time{}, &budget)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			parts = append(parts, "quarantine empty")
		case err != nil:
			parts = append(parts, fmt.Sprintf("quarantine unreadable (%v)", firstLine(err.Error())))
		default:
			more := ""
			if s.truncated {
				more = " or more"
			}
			parts = append(parts, fmt.Sprintf("%d%s files in quarantine", s.files, more))
		}
	}
	var q, r sql.NullInt64
	since := o.Now.Add(-24 * time.Hour).Unix()
	if err := d.db.QueryRowContext(ctx, `SELECT sum(quarantined), sum(refused) FROM passes WHERE started >= ?`, since).Scan(&q, &r); err != nil {
		return nil, "", d.wrap(err)
	}
	parts = append(parts, fmt.Sprintf("last 24 h: %d files quarantined, %d refused", q.Int64, r.Int64))
	// Jobs with an end but no start event: their GPU-hours are not
	// counted, or (schema 5 on: start_estimated, the end or the first
	// sample standing in) only estimated. Fresh ones may still get their
	// start in the next pass.
	cond := "start IS NULL"
	var hasEst int
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'start_estimated'`).Scan(&hasEst); err != nil {
		return nil, "", d.wrap(err)
	}
	if hasEst > 0 {
		cond = "(start IS NULL OR start_estimated = 1)"
	}
	var noStart int64
	if err := d.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE `+cond+` AND end IS NOT NULL AND end < ?`,
		o.Now.Add(-o.Lag).Unix()).Scan(&noStart); err != nil {
		return nil, "", d.wrap(err)
	}
	if noStart > 0 {
		problems = append(problems, fmt.Sprintf("ledger: %d jobs have no start event (no prolog record and no Slurm start): their GPU-hours are missing or estimated", noStart))
	}
	return problems, strings.Join(parts, "; "), nil
}
