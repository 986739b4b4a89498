package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// TestCloseJobNullStart: closing a job ends each node at the close time,
// or at its start when that is later, and leaves a node without a start
// open, the same on both engines (SQLite's max(?, NULL) is NULL,
// PostgreSQL's greatest(?, NULL) is not).
func TestCloseJobNullStart(t *testing.T) {
	ctx := context.Background()
	l := ledgerdb.NewLedger(t)
	s, err := Open(ctx, Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	loc := l.Loc()
	ledgerdb.Exec(t, loc, `INSERT INTO nodes(id, cluster, name) VALUES (1, 'c', 'n1'), (2, 'c', 'n2'), (3, 'c', 'n3')`)
	ledgerdb.Exec(t, loc, `INSERT INTO jobs(id, cluster, job_id) VALUES (1, 'c', 7)`)
	ledgerdb.Exec(t, loc, `INSERT INTO job_nodes(job, node_id, gpus, start) VALUES (1, 1, 1, NULL), (1, 2, 1, 500), (1, 3, 1, 2000)`)
	b, err := s.Begin(ctx, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.CloseJob(OpenJob{Row: 1, Cluster: "c", JobID: 7, Nodes: []int64{1, 2, 3}}, time.Unix(1000, 0), "sacct", "COMPLETED", nil); err != nil {
		b.Rollback()
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	got := ledgerdb.Strings(t, loc, `SELECT node_id, coalesce(CAST(end AS TEXT), 'NULL') FROM job_nodes ORDER BY node_id`)
	if diff := cmp.Diff([]string{"1|NULL", "2|1000", "3|2000"}, got); diff != "" {
		t.Errorf("job_nodes ends after CloseJob (-want +got):\n%s", diff)
	}
}
