package report

import (
	"context"
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
func (d *Ledger) checkFiles(ctx context.Context, o CheckOptions) (problems []string, summary string, err error) {
	var parts []string
	// The start of the Nth most recent pass: a file older than that was
	// there for N passes and is still there.
	var cutoff time.Time
	if o.LeftPasses > 0 {
		started, err := d.st.PassStarted(ctx, o.LeftPasses)
		if err != nil {
			return nil, "", d.wrap(err)
		}
		if started != nil {
			cutoff = time.Unix(*started, 0)
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
	left, oldestLeft, found, err := d.st.LastPassLeft(ctx)
	switch {
	case err != nil:
		return nil, "", d.wrap(err)
	case found && left > 0 && len(problems) == 0 && oldestLeft != nil && !cutoff.IsZero() && time.Unix(*oldestLeft, 0).Before(cutoff):
		problems = append(problems, fmt.Sprintf("incoming: the last ingest pass left %d files, the oldest from %s, older than %d passes: ingest cannot retire them; see gpuacct serve's log",
			left, time.Unix(*oldestLeft, 0).UTC().Format(time.RFC3339), o.LeftPasses))
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
	q, r, err := d.st.PassCounts(ctx, o.Now.Add(-24*time.Hour).Unix())
	if err != nil {
		return nil, "", d.wrap(err)
	}
	parts = append(parts, fmt.Sprintf("last 24 h: %d files quarantined, %d refused", q, r))
	// Jobs with an end but no start event: their GPU-hours are not
	// counted, or only estimated (the end or the first sample standing
	// in). Fresh ones may still get their start in the next pass.
	noStart, err := d.st.JobsWithoutStart(ctx, o.Now.Add(-o.Lag).Unix())
	if err != nil {
		return nil, "", d.wrap(err)
	}
	if noStart > 0 {
		problems = append(problems, fmt.Sprintf("ledger: %d jobs have no start event (no prolog record and no Slurm start): their GPU-hours are missing or estimated", noStart))
	}
	return problems, strings.Join(parts, "; "), nil
}
