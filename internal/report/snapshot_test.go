package report

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestReportOneSnapshot: a report whose plan reads a span and its edge
// hours in several statements prints what the ledger held at its first
// statement, though the ingest commits a pass between every two of them
// (each bringing a running job's allocation further into the edge hours
// the plan takes away): never a mix of before and after, which left a
// month or a day in a zone off UTC short of the running job's newest
// hours.
func TestReportOneSnapshot(t *testing.T) {
	ctx := context.Background()
	utc := func(m time.Month, d, h, mi int) int64 { return time.Date(2026, m, d, h, mi, 0, 0, time.UTC).Unix() }
	tokyo, stJohns := loadZone(t, "Asia/Tokyo"), loadZone(t, "America/St_Johns")
	inZone := func(loc *time.Location, m time.Month, d int) time.Time { return time.Date(2026, m, d, 0, 0, 0, 0, loc) }
	for _, tc := range []struct {
		name       string
		start, now int64 // the running job's start and the last pass before the report
		w          timespec.Window
		p          timespec.Period
		// held: the window holds hours the passes add to.
		held bool
	}{
		// Tokyo's March ends at 15:00 UTC on the 31st: its plan reads
		// March UTC and takes away the hours after 15:00, where the job runs.
		{"Tokyo months", utc(3, 31, 10, 0), utc(3, 31, 20, 10),
			timespec.Window{Start: inZone(tokyo, 2, 1), End: inZone(tokyo, 5, 1)}, timespec.Month, true},
		{"Tokyo, one month", utc(3, 31, 10, 0), utc(3, 31, 20, 10),
			timespec.Window{Start: inZone(tokyo, 3, 1), End: inZone(tokyo, 4, 1)}, timespec.None, false},
		// St John's April starts at 02:30 UTC on the 1st: its plan takes
		// away the hours before 03:00, where the job runs.
		{"St John's months", utc(3, 31, 22, 0), utc(4, 1, 1, 10),
			timespec.Window{Start: inZone(stJohns, 3, 1), End: inZone(stJohns, 6, 1)}, timespec.Month, true},
		// Tokyo's days: UTC days less the hours after 15:00 UTC.
		{"Tokyo days", utc(4, 1, 10, 0), utc(4, 1, 16, 10),
			timespec.Window{Start: inZone(tokyo, 3, 30), End: inZone(tokyo, 4, 4)}, timespec.Day, true},
		{"Tokyo weeks", utc(4, 1, 10, 0), utc(4, 1, 16, 10),
			timespec.Window{Start: inZone(tokyo, 3, 23), End: inZone(tokyo, 4, 13)}, timespec.Week, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &pjob{id: 7, node: 0, gpus: []int{0, 1}, user: "alice", acct: "vision", part: "gpu",
				start: tc.start, end: tc.now, running: true, ivMS: 60000}
			loc := buildSampledLedger(t, []*pjob{j}, tc.now)
			w, err := store.Open(ctx, store.At(loc))
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			db := openTest(t, loc)
			passes := 0
			// pass is the ingest's pass of every 2 s: the running job's
			// allocation brought up to a few minutes later each time.
			pass := func() {
				passes++
				b, err := w.Begin(ctx, time.Unix(tc.now+int64(passes)*5*60, 0))
				if err != nil {
					t.Fatal(err)
				}
				if err := b.ExtendOpen(); err != nil {
					b.Rollback()
					t.Fatal(err)
				}
				if err := b.Commit(); err != nil {
					t.Fatal(err)
				}
			}
			for _, kind := range []string{"teams", "nodes"} {
				req := Request{Kind: kind, Window: HourWindow(tc.w), Period: tc.p}
				name := fmt.Sprintf("%s by %s", kind, periodName(tc.p))
				before, err := db.Report(ctx, req)
				if err != nil {
					t.Fatalf("%s, before: %v", name, err)
				}
				n := passes
				db.between = pass
				got, err := db.Report(ctx, req)
				db.between = nil
				if err != nil {
					t.Fatalf("%s, with passes between its reads: %v", name, err)
				}
				if passes == n {
					t.Fatalf("%s: its plan read one statement: no pass between two", name)
				}
				after, err := db.Report(ctx, req)
				if err != nil {
					t.Fatalf("%s, after: %v", name, err)
				}
				if cmp.Equal(before, after) == tc.held {
					t.Fatalf("%s: the passes changed the report: %v, want %v", name, !cmp.Equal(before, after), tc.held)
				}
				if d := cmp.Diff(before, got); d != "" {
					t.Errorf("%s with passes between its reads (-before +got):\n%s", name, d)
				}
			}
		})
	}
}

// loadZone is the zone name, or the test's end.
func loadZone(t testing.TB, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
