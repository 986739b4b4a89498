package report

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// TestRefusedEarly: a report over the sums or the rows it may hold is
// refused with the error it always gave, and stops reading as soon as the
// refusal is certain: over the sums at once (any plan); over the rows
// once the groups that will be rows pass the cap, where the plan only
// adds and the sums cannot pass theirs (else the refusal for sums, first,
// may still come). Without the early stop every row is read.
func TestRefusedEarly(t *testing.T) {
	ctx := context.Background()
	jobs, base, now := pScenario(rand.New(rand.NewPCG(35, 11)))
	db := openTest(t, buildSampledLedger(t, jobs, now))
	read := 0
	db.handed = func(grain) { read++ }
	window := func(zone string) timespec.Window {
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		// Midnights of the zone: in UTC, a plan of whole UTC days, which
		// only adds.
		midnight := func(u int64) time.Time {
			y, m, d := time.Unix(u, 0).In(loc).Date()
			return time.Date(y, m, d, 0, 0, 0, 0, loc)
		}
		return timespec.Window{Start: midnight(base - 86400), End: midnight(now + 2*86400)}
	}
	// report runs r under caps and says what it read.
	report := func(r Request, groups, rows int) (int, error) {
		defer SetCaps(groups, rows)()
		read = 0
		_, err := db.Report(ctx, r)
		return read, err
	}
	const many = 1 << 30
	for _, tc := range []struct {
		name         string
		kind, zone   string
		limit        int
		groups, rows int
		want         string
		early        bool
	}{
		{"sums, UTC", "users", "UTC", 0, 50, many, "more than 50 sums", true},
		{"sums, a plan that subtracts (Tokyo)", "users", "Asia/Tokyo", 0, 50, many, "more than 50 sums", true},
		{"sums before rows, as always", "users", "UTC", 0, 50, 20, "more than 50 sums", true},
		{"sums, nodes", "nodes", "America/St_Johns", 0, 30, many, "more than 30 sums", true},
		{"rows, nodes", "nodes", "UTC", 0, many, 100, "more than 100 rows", true},
		{"rows, teams", "teams", "UTC", 0, many, 100, "more than 100 rows", true},
		{"rows, users", "users", "UTC", 0, many, 100, "more than 100 rows", true},
		{"rows, top 1 by day", "users", "UTC", 1, many, 60, "more than 60 rows", true},
		{"rows, a plan that subtracts (Tokyo): read to the end", "nodes", "Asia/Tokyo", 0, many, 100, "more than 100 rows", false},
		{"rows, a tree: read to the end", "tree", "UTC", 0, many, 100, "more than 100 rows", false},
		// groups 0: one fewer than the buckets × the users, more than the
		// report holds: the sums might have passed their cap.
		{"rows, the sums not bounded: read to the end", "users", "UTC", 0, 0, 100, "more than 100 rows", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Request{Kind: tc.kind, Window: window(tc.zone), Period: timespec.Day, Limit: tc.limit}
			all, err := report(r, many, many)
			if err != nil {
				t.Fatal(err)
			}
			groups := tc.groups
			if groups == 0 {
				users, err := db.Distinct(ctx, "user")
				if err != nil {
					t.Fatal(err)
				}
				groups = len(timespec.Buckets(r.Window, r.Period))*len(users) - 1
			}
			n, err := report(r, groups, tc.rows)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !IsBadInput(err) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
			if tc.early && n >= all {
				t.Errorf("read %d rows of %d: not stopped when refused", n, all)
			}
			if !tc.early && n != all {
				t.Errorf("read %d rows of %d, want all", n, all)
			}
		})
	}
}

// TestRefusedBeforeEdgeHours: a report by day off UTC over the sums it
// may hold is refused from its spans of UTC days alone, read before any
// edge hour (coarseFirst): the groups come all from the spans, in a
// tenth of the rows the hours hold. Read bucket by bucket, each day's
// edge hours came between its span and the next day's.
func TestRefusedBeforeEdgeHours(t *testing.T) {
	ctx := context.Background()
	jobs, base, now := pScenario(rand.New(rand.NewPCG(35, 12)))
	db := openTest(t, buildSampledLedger(t, jobs, now))
	loc, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	day := func(u int64) time.Time {
		y, m, d := time.Unix(u, 0).In(loc).Date()
		return time.Date(y, m, d, 0, 0, 0, 0, loc)
	}
	r := Request{Kind: "users", Window: timespec.Window{Start: day(base - 86400), End: day(now + 2*86400)}, Period: timespec.Day}
	read := map[grain]int{}
	db.handed = func(g grain) { read[g]++ }
	if _, err := db.Report(ctx, r); err != nil {
		t.Fatal(err)
	}
	if read[daily] == 0 || read[hourly] == 0 {
		t.Fatalf("the whole report read %v rows by grain: want spans of days and edge hours", read)
	}
	defer SetCaps(20, 1<<30)()
	clear(read)
	_, err = db.Report(ctx, r)
	if err == nil || !strings.Contains(err.Error(), "more than 20 sums") {
		t.Fatalf("error %v, want the refusal for sums", err)
	}
	if read[hourly] != 0 {
		t.Errorf("read %d edge hours' rows (and %d of days) before the refusal, want none", read[hourly], read[daily])
	}
}
