package report

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// TestPlan: months inside days inside hours, each piece merged with its
// neighbour of the same rollup, and no month where a bucket does not hold
// a whole UTC month; a month off UTC reads the UTC month and its edge
// hours, a bucket off UTC midnights the days between the nearest ones and
// its edge hours, two such buckets their common edge hours once; a bucket
// of whole UTC days sums them.
func TestPlan(t *testing.T) {
	utc := func(s string) int64 {
		x, err := time.Parse("2006-01-02T15", s)
		if err != nil {
			t.Fatal(err)
		}
		return x.Unix()
	}
	tokyo, stJohns := loadZone(t, "Asia/Tokyo"), loadZone(t, "America/St_Johns")
	b := func(from, to string) timespec.Bucket {
		return timespec.Bucket{Start: time.Unix(utc(from), 0).UTC(), End: time.Unix(utc(to), 0).UTC()}
	}
	// Tokyo's months: midnight on the 1st, 15:00 UTC the day before.
	tokyoMonths := func(y int, m0, m1 time.Month) []timespec.Bucket {
		var out []timespec.Bucket
		for m := m0; m < m1; m++ {
			out = append(out, timespec.Bucket{Start: time.Date(y, m, 1, 0, 0, 0, 0, tokyo), End: time.Date(y, m+1, 1, 0, 0, 0, 0, tokyo)})
		}
		return out
	}
	p := func(g grain, from, to string) piece { return piece{grain: g, from: utc(from), to: utc(to)} }
	// span is a piece of a span plan: its rows count in the bucket at.
	span := func(g grain, from, to, at string, minus bool) piece {
		return piece{grain: g, from: utc(from), to: utc(to), at: utc(at), minus: minus}
	}
	// shared is an edge piece that counts, with the other sign, in the
	// next bucket at too.
	shared := func(pc piece, at string) piece {
		pc.also = utc(at)
		return pc
	}
	// St John's midnight is 03:30 UTC: the bucket starts there.
	atStJohns := func(ps []piece) []piece {
		for i := range ps {
			ps[i].at = time.Date(2026, 2, 1, 0, 0, 0, 0, stJohns).Unix()
		}
		return ps
	}
	for _, c := range []struct {
		name     string
		bs       []timespec.Bucket
		needNode bool
		months   bool
		want     []piece
	}{
		{"hours only", []timespec.Bucket{b("2026-03-04T05", "2026-03-04T09")}, false, true,
			[]piece{p(hourly, "2026-03-04T05", "2026-03-04T09")}},
		{"days, no whole month: the days between the nearest midnights, the edge hours taken away or added", []timespec.Bucket{b("2026-03-04T05", "2026-03-20T09")}, false, true,
			[]piece{span(daily, "2026-03-04T00", "2026-03-20T00", "2026-03-04T05", false), span(hourly, "2026-03-04T00", "2026-03-04T05", "2026-03-04T05", true),
				span(hourly, "2026-03-20T00", "2026-03-20T09", "2026-03-04T05", false)}},
		{"Tokyo days: each a UTC day, their common edge read once for both", []timespec.Bucket{
			{Start: time.Date(2026, 3, 4, 0, 0, 0, 0, tokyo), End: time.Date(2026, 3, 5, 0, 0, 0, 0, tokyo)},
			{Start: time.Date(2026, 3, 5, 0, 0, 0, 0, tokyo), End: time.Date(2026, 3, 6, 0, 0, 0, 0, tokyo)}}, false, true,
			[]piece{span(daily, "2026-03-04T00", "2026-03-05T00", "2026-03-03T15", false), span(hourly, "2026-03-03T15", "2026-03-04T00", "2026-03-03T15", false),
				shared(span(hourly, "2026-03-04T15", "2026-03-05T00", "2026-03-03T15", true), "2026-03-04T15"),
				span(daily, "2026-03-05T00", "2026-03-06T00", "2026-03-04T15", false), span(hourly, "2026-03-05T15", "2026-03-06T00", "2026-03-04T15", true)}},
		{"one whole month", []timespec.Bucket{b("2026-03-01T00", "2026-04-01T00")}, false, true,
			[]piece{p(monthly, "2026-03-01T00", "2026-04-01T00")}},
		{"months inside days inside hours", []timespec.Bucket{b("2026-01-15T13", "2026-04-03T02")}, false, true,
			[]piece{p(hourly, "2026-01-15T13", "2026-01-16T00"), p(daily, "2026-01-16T00", "2026-02-01T00"),
				p(monthly, "2026-02-01T00", "2026-04-01T00"), p(daily, "2026-04-01T00", "2026-04-03T00"), p(hourly, "2026-04-03T00", "2026-04-03T02")}},
		{"UTC month buckets merge into one piece", []timespec.Bucket{b("2026-01-01T00", "2026-02-01T00"), b("2026-02-01T00", "2026-03-01T00"), b("2026-03-01T00", "2026-04-01T00")}, false, true,
			[]piece{p(monthly, "2026-01-01T00", "2026-04-01T00")}},
		{"December to January: edges a day from the months", []timespec.Bucket{b("2026-11-30T00", "2027-02-02T00")}, false, true,
			[]piece{span(monthly, "2026-12-01T00", "2027-02-01T00", "2026-11-30T00", false), span(hourly, "2026-11-30T00", "2026-12-01T00", "2026-11-30T00", false),
				span(hourly, "2027-02-01T00", "2027-02-02T00", "2026-11-30T00", false)}},
		{"edges more than a day from the months", []timespec.Bucket{b("2026-11-29T23", "2027-02-02T01")}, false, true,
			[]piece{p(hourly, "2026-11-29T23", "2026-11-30T00"), p(daily, "2026-11-30T00", "2026-12-01T00"), p(monthly, "2026-12-01T00", "2027-02-01T00"),
				p(daily, "2027-02-01T00", "2027-02-02T00"), p(hourly, "2027-02-02T00", "2027-02-02T01")}},
		{"Tokyo months: the UTC month, the hours before it added, the last hours taken away", tokyoMonths(2026, 2, 4), false, true,
			[]piece{span(monthly, "2026-02-01T00", "2026-03-01T00", "2026-01-31T15", false), span(hourly, "2026-01-31T15", "2026-02-01T00", "2026-01-31T15", false),
				shared(span(hourly, "2026-02-28T15", "2026-03-01T00", "2026-01-31T15", true), "2026-02-28T15"),
				span(monthly, "2026-03-01T00", "2026-04-01T00", "2026-02-28T15", false),
				span(hourly, "2026-03-31T15", "2026-04-01T00", "2026-02-28T15", true)}},
		{"Tokyo quarter in one bucket", []timespec.Bucket{{Start: time.Date(2026, 1, 1, 0, 0, 0, 0, tokyo), End: time.Date(2026, 4, 1, 0, 0, 0, 0, tokyo)}}, false, true,
			[]piece{span(monthly, "2026-01-01T00", "2026-04-01T00", "2025-12-31T15", false), span(hourly, "2025-12-31T15", "2026-01-01T00", "2025-12-31T15", false),
				span(hourly, "2026-03-31T15", "2026-04-01T00", "2025-12-31T15", true)}},
		{"St John's month (-3:30), the window's last: hours from the first whole hour in it to the last the window ends after", []timespec.Bucket{{Start: time.Date(2026, 2, 1, 0, 0, 0, 0, stJohns), End: time.Date(2026, 3, 1, 0, 0, 0, 0, stJohns)}}, false, true,
			atStJohns([]piece{span(monthly, "2026-02-01T00", "2026-03-01T00", "2026-02-01T03", false), span(hourly, "2026-02-01T00", "2026-02-01T04", "2026-02-01T03", true),
				span(hourly, "2026-03-01T00", "2026-03-01T03", "2026-02-01T03", false)})},
		{"UTC weeks: their days, summed a week at a time", []timespec.Bucket{b("2026-03-02T00", "2026-03-09T00"), b("2026-03-09T00", "2026-03-16T00")}, false, true,
			[]piece{span(daily, "2026-03-02T00", "2026-03-09T00", "2026-03-02T00", false), span(daily, "2026-03-09T00", "2026-03-16T00", "2026-03-09T00", false)}},
		{"node forces hours", []timespec.Bucket{b("2026-01-01T00", "2026-03-01T00")}, true, true,
			[]piece{p(hourly, "2026-01-01T00", "2026-03-01T00")}},
		{"ledger without rollup_monthly", []timespec.Bucket{b("2026-01-01T00", "2026-03-01T05")}, false, false,
			[]piece{p(daily, "2026-01-01T00", "2026-03-01T00"), p(hourly, "2026-03-01T00", "2026-03-01T05")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if diff := cmp.Diff(c.want, plan(c.bs, c.needNode, c.months, true), cmp.AllowUnexported(piece{})); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}
