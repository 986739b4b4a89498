package store

import (
	"context"
	"fmt"
)

// JobTotals counts the ledger's jobs and sums their allocated GPU-seconds.
func (s *Ledger) JobTotals(ctx context.Context) (jobs, allocGPUS int64, err error) {
	if err := s.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(alloc_gpu_s), 0) FROM jobs`).Scan(&jobs, &allocGPUS); err != nil {
		return 0, 0, fmt.Errorf("count jobs: %w", translate(err))
	}
	return jobs, allocGPUS, nil
}

// TableRows is how many rows a ledger table holds.
type TableRows struct {
	Table string
	Rows  int64
}

// RowCounts counts the rows of the tables that grow with the cluster (a
// full scan each: for benchmarks and sizing, not for a request path).
func (s *Ledger) RowCounts(ctx context.Context) ([]TableRows, error) {
	tables := []string{"jobs", "job_nodes", "job_gpus", "job_hours", "rollup_hourly", "rollup_daily", "samples", "ingested_files"}
	out := make([]TableRows, 0, len(tables))
	for _, tbl := range tables {
		var n int64
		q := `SELECT count(*) FROM ` + tbl
		if tbl == "samples" {
			q = `SELECT coalesce(sum(n), 0) FROM sample_packs` // packed: n a row
		}
		if err := s.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return nil, fmt.Errorf("count %s: %w", tbl, translate(err))
		}
		out = append(out, TableRows{Table: tbl, Rows: n})
	}
	return out, nil
}

// Checkpoint copies the write-ahead log into the database file and
// empties it, so that the file's size is the ledger's (a no-op in DELETE
// journal mode; and on PostgreSQL, whose server keeps its own log).
func (s *Ledger) Checkpoint(ctx context.Context) error {
	if s.pg != nil {
		return nil
	}
	if _, err := s.db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return fmt.Errorf("checkpoint %q: %w", s.Path, translate(err))
	}
	return nil
}

// MonthUsage is one (UTC month, group) of the daily rollup, non-ignored
// rows only.
type MonthUsage struct {
	Month         string // YYYY-MM
	Group         string
	AllocH, UsedH float64
	Jobs          int64
}

// UsageByMonth sums the daily rollup by UTC month and a rollup column
// (account, user, partition, model or cluster), in month then group
// order: the year report's shape, summed by the database.
func (s *Ledger) UsageByMonth(ctx context.Context, col string) ([]MonthUsage, error) {
	switch col {
	case "account", "user", "partition", "model", "cluster":
	default:
		return nil, fmt.Errorf("usage by month and %q: not a rollup column (account, user, partition, model, cluster)", col)
	}
	month := `strftime('%Y-%m', day*86400, 'unixepoch')`
	if s.pg != nil {
		month = `to_char(to_timestamp(day*86400) AT TIME ZONE 'UTC', 'YYYY-MM')`
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+month+` AS month, `+col+`, sum(alloc_gpu_s)/3600.0, sum(used_gpu_s)/3600.0, sum(jobs)
 FROM rollup_daily WHERE ignored = 0 GROUP BY month, `+col+` ORDER BY month, `+col)
	out, err := collect(rows, err, func(r batchRows, u *MonthUsage) error {
		return r.Scan(&u.Month, &u.Group, &u.AllocH, &u.UsedH, &u.Jobs)
	})
	if err != nil {
		return nil, fmt.Errorf("usage by month and %s: %w", col, translate(err))
	}
	return out, nil
}
