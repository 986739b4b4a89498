package store

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestLedgerStats(t *testing.T) {
	ctx := context.Background()
	s := readFixture(t)
	jobs, alloc, err := s.JobTotals(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if jobs != 4 || alloc != 3600+7200+1700 {
		t.Errorf("JobTotals = %d jobs, %d GPU-s; want 4, %d", jobs, alloc, 3600+7200+1700)
	}
	counts, err := s.RowCounts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []TableRows{{"jobs", 4}, {"job_nodes", 3}, {"job_gpus", 2}, {"job_hours", 2}, {"rollup_hourly", 4},
		{"rollup_daily", 2}, {"samples", 4}, {"ingested_files", 0}}
	if diff := cmp.Diff(want, counts); diff != "" {
		t.Errorf("RowCounts (-want +got):\n%s", diff)
	}
	last, err := s.NodeLastRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]NodeLast{{"c1", "n1", 1000}}, last); diff != "" {
		t.Errorf("NodeLastRecords (-want +got):\n%s", diff)
	}
}

func TestUsageByMonth(t *testing.T) {
	ctx := context.Background()
	s := readFixture(t)
	for _, tc := range []struct {
		col     string
		want    []MonthUsage
		wantErr string
	}{
		{col: "account", want: []MonthUsage{{"1970-01", "bio", 10.0 / 3600, 1.0 / 3600, 0}, {"1970-01", "physics", 4000.0 / 3600, 2000.0 / 3600, 1}}},
		{col: "model", want: []MonthUsage{{"1970-01", "A100", 4010.0 / 3600, 2001.0 / 3600, 1}}},
		{col: "alloc_gpu_s; DROP TABLE jobs", wantErr: "not a rollup column"},
	} {
		t.Run(tc.col, func(t *testing.T) {
			got, err := s.UsageByMonth(ctx, tc.col)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("UsageByMonth(%q) = %v, want an error with %q", tc.col, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("UsageByMonth(%q) (-want +got):\n%s", tc.col, diff)
			}
		})
	}
}

// TestSQLiteCheckpoint: after a checkpoint the write-ahead log is empty, so the
// file's size is the ledger's.
func TestSQLiteCheckpoint(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, Options{Path: t.TempDir() + "/a.db", Journal: JournalWAL})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.RecordPass(ctx, Pass{Started: time.Unix(10, 0), Finished: time.Unix(11, 0), OK: true}); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(s.Path + "-wal"); err != nil || st.Size() == 0 {
		t.Fatalf("no write-ahead log to checkpoint: %v", err)
	}
	if err := s.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(s.Path + "-wal"); err != nil || st.Size() != 0 {
		t.Errorf("write-ahead log after the checkpoint: %v, %d bytes; want empty", err, st.Size())
	}
}
