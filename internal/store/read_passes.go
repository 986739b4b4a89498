package store

import (
	"context"
	"database/sql"
	"errors"
	"strings"
)

// LastGoodPass is when the last successful ingest pass finished (Unix
// seconds), nil if none did.
func (s *Ledger) LastGoodPass(ctx context.Context) (*int64, error) {
	var t sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT max(finished) FROM passes WHERE ok = 1`).Scan(&t); err != nil {
		return nil, translate(err)
	}
	return ptrInt(t), nil
}

// PassRow is one ingest pass as check reads it.
type PassRow struct {
	Started  int64
	Finished *int64 // nil while it runs (or when it died)
	OK       bool
	Error    string
}

// LastPass is the most recent ingest pass; found is false when none ran.
func (s *Ledger) LastPass(ctx context.Context) (p PassRow, found bool, err error) {
	var finished sql.NullInt64
	var perr sql.NullString
	err = s.db.QueryRowContext(ctx, `SELECT started, finished, ok, error FROM passes ORDER BY id DESC LIMIT 1`).Scan(&p.Started, &finished, &p.OK, &perr)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return PassRow{}, false, nil
	case err != nil:
		return PassRow{}, false, translate(err)
	}
	p.Finished, p.Error = ptrInt(finished), perr.String
	return p, true, nil
}

// PassStarted is when the back-th most recent pass started (1: the last
// one), nil when fewer passes ran.
func (s *Ledger) PassStarted(ctx context.Context, back int) (*int64, error) {
	var started sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT started FROM passes ORDER BY id DESC LIMIT 1 OFFSET ?`, back-1).Scan(&started)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return nil, translate(err)
	}
	return ptrInt(started), nil
}

// LastPassLeft is what the last pass recorded it left in incoming: how
// many files and the oldest one's time (nil if none). found is false
// when no pass ran or the ledger predates the count.
func (s *Ledger) LastPassLeft(ctx context.Context) (left int64, oldest *int64, found bool, err error) {
	var o sql.NullInt64
	err = s.db.QueryRowContext(ctx, `SELECT files_left, oldest_left FROM passes ORDER BY id DESC LIMIT 1`).Scan(&left, &o)
	switch {
	case errors.Is(err, sql.ErrNoRows), err != nil && strings.Contains(err.Error(), "no such column"):
		return 0, nil, false, nil
	case err != nil:
		return 0, nil, false, translate(err)
	}
	return left, ptrInt(o), true, nil
}

// PassCounts sums the files the passes that started at or after since
// (Unix seconds) quarantined and refused.
func (s *Ledger) PassCounts(ctx context.Context, since int64) (quarantined, refused int64, err error) {
	var q, r sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT sum(quarantined), sum(refused) FROM passes WHERE started >= ?`, since).Scan(&q, &r); err != nil {
		return 0, 0, translate(err)
	}
	return q.Int64, r.Int64, nil
}

// JobsWithoutStart counts the jobs that ended before before (Unix
// seconds) with no start event: no start at all or, from schema 5 on,
// one estimated from their end or first sample.
func (s *Ledger) JobsWithoutStart(ctx context.Context, before int64) (int64, error) {
	cond := "start IS NULL"
	// Every PostgreSQL ledger has the column: no gpuacct before schema 5
	// wrote one.
	hasEst := 1
	if s.pg == nil {
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_table_info('jobs') WHERE name = 'start_estimated'`).Scan(&hasEst); err != nil {
			return 0, translate(err)
		}
	}
	if hasEst > 0 {
		cond = "(start IS NULL OR start_estimated = 1)"
	}
	var n int64
	if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM jobs WHERE `+cond+` AND end IS NOT NULL AND end < ?`, before).Scan(&n); err != nil {
		return 0, translate(err)
	}
	return n, nil
}
