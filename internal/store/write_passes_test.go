package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestRecordPass: what ingest records is what check reads back.
func TestRecordPass(t *testing.T) {
	for _, tc := range []struct {
		name       string
		pass       Pass
		want       PassRow
		wantLeft   int64
		wantOldest *int64
		wantQ      int64
	}{
		{
			name:  "ok",
			pass:  Pass{Started: time.Unix(100, 0), Finished: time.Unix(105, 0), OK: true, Files: 3, Records: 40, Quarantined: 2, Refused: 1},
			want:  PassRow{Started: 100, Finished: pi(105), OK: true},
			wantQ: 2,
		},
		{
			name:       "failed with files left",
			pass:       Pass{Started: time.Unix(200, 0), Finished: time.Unix(230, 0), Error: "disk full", Left: 4, OldestLeft: time.Unix(150, 0)},
			want:       PassRow{Started: 200, Finished: pi(230), Error: "disk full"},
			wantLeft:   4,
			wantOldest: pi(150),
		},
		{
			name: "oldest ignored when nothing is left",
			pass: Pass{Started: time.Unix(300, 0), Finished: time.Unix(301, 0), OK: true, OldestLeft: time.Unix(5, 0)},
			want: PassRow{Started: 300, Finished: pi(301), OK: true},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s := openTemp(t)
			if err := s.RecordPass(ctx, tc.pass); err != nil {
				t.Fatal(err)
			}
			got, found, err := s.LastPass(ctx)
			if err != nil || !found {
				t.Fatalf("LastPass: %v, found %v", err, found)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LastPass (-want +got):\n%s", diff)
			}
			left, oldest, _, err := s.LastPassLeft(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if left != tc.wantLeft || !cmp.Equal(oldest, tc.wantOldest) {
				t.Errorf("LastPassLeft = %d, %v; want %d, %v", left, oldest, tc.wantLeft, tc.wantOldest)
			}
			q, _, err := s.PassCounts(ctx, 0)
			if err != nil || q != tc.wantQ {
				t.Errorf("PassCounts quarantined = %d, %v; want %d", q, err, tc.wantQ)
			}
		})
	}
}

// TestPruneIngestedFiles: names older than the cut go, the rest stay.
func TestPruneIngestedFiles(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	if _, err := s.db.ExecContext(ctx, `INSERT INTO ingested_files(node, name, sha256, size, records, at) VALUES
	 ('n1', 'old', 'x', 1, 1, 100), ('n1', 'edge', 'x', 1, 1, 200), ('n2', 'new', 'x', 1, 1, 300)`); err != nil {
		t.Fatal(err)
	}
	b, err := s.Begin(ctx, time.Unix(400, 0))
	if err != nil {
		t.Fatal(err)
	}
	n, err := b.PruneIngestedFiles(time.Unix(200, 0))
	if err != nil {
		b.Rollback()
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if n != 1 {
		t.Errorf("pruned %d names, want 1", n)
	}
	if diff := cmp.Diff([]string{"edge", "new"}, dump(t, s.db, `SELECT name FROM ingested_files ORDER BY name`)); diff != "" {
		t.Errorf("ingested_files (-want +got):\n%s", diff)
	}
}
