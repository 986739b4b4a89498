package store

import (
	"context"
	"fmt"
	"strings"
)

// JobsSince is Jobs for the counted runs that also started at or after
// startFrom (Unix seconds). jobs_start bounds a start only from above,
// so without a lower bound a rare filter reads every older run; a caller
// that knows the longest run passes the window's start minus it (or the
// oldest open run's start) and reads only the window's share of the
// index. q.Ignored is not honoured: only counted runs are listed.
func (s *Store) JobsSince(ctx context.Context, q JobsQuery, startFrom int64, fn func(*JobRow) bool) error {
	var b strings.Builder
	args := []any{q.To, startFrom, q.From}
	b.WriteString(`SELECT ` + jobCols + ` FROM jobs j WHERE j.start < ? AND j.start >= ? AND (j.end IS NULL OR j.end > ?) AND j.ignored = 0`)
	inList(&b, &args, "j.cluster", q.Clusters)
	inList(&b, &args, "j.user", q.Users)
	inList(&b, &args, "j.account", q.Accounts)
	inList(&b, &args, "j.partition", q.Partitions)
	if len(q.NodeIDs) > 0 {
		b.WriteString(" AND EXISTS (SELECT 1 FROM job_nodes n WHERE n.job = j.id")
		inList(&b, &args, "n.node_id", q.NodeIDs)
		b.WriteString(")")
	}
	if len(q.Models) > 0 {
		b.WriteString(" AND EXISTS (SELECT 1 FROM job_nodes n WHERE n.job = j.id")
		inList(&b, &args, "n.model", q.Models)
		b.WriteString(")")
	}
	switch q.Sort {
	case "", JobsByStart:
		b.WriteString(" ORDER BY j.start DESC, j.id DESC")
	case JobsByAlloc:
		b.WriteString(" ORDER BY j.alloc_gpu_s DESC, j.id")
	case JobsByEff:
		b.WriteString(" ORDER BY CASE WHEN j.alloc_gpu_s > 0 THEN j.used_gpu_s / j.alloc_gpu_s ELSE 1e9 END, j.alloc_gpu_s DESC, j.id")
	case JobsByIdle:
		b.WriteString(" ORDER BY j.idle_gpu_s DESC, j.id")
	default:
		return fmt.Errorf("job order %q is not start, alloc, eff or idle", q.Sort)
	}
	rows, err := s.DB.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return translate(err)
	}
	defer rows.Close()
	var j JobRow
	var sc jobScan
	for rows.Next() {
		if err := sc.scan(rows, &j); err != nil {
			return translate(err)
		}
		if !fn(&j) {
			return nil
		}
	}
	return translate(rows.Err())
}
