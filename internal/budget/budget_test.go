package budget

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
)

func zone(t *testing.T, name string) *time.Location {
	t.Helper()
	loc, err := time.LoadLocation(name)
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func utc(s string) time.Time {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		panic(err)
	}
	return t
}

func TestPeriod(t *testing.T) {
	rng := Budget{Kind: Range, From: civil{2026, 11, 1}, To: civil{2026, 11, 30}}
	for _, tc := range []struct {
		name   string
		b      Budget
		zone   string
		fiscal time.Month
		now    string
		want   [3]string // label, start, end (UTC)
	}{
		{"month utc", Budget{Kind: Month}, "UTC", 1, "2026-03-15T12:00:00Z",
			[3]string{"2026-03", "2026-03-01T00:00:00Z", "2026-04-01T00:00:00Z"}},
		// 1 March 01:00 in Tokyo is still February in UTC
		{"month tokyo", Budget{Kind: Month}, "Asia/Tokyo", 1, "2026-02-28T16:00:00Z",
			[3]string{"2026-03", "2026-02-28T15:00:00Z", "2026-03-31T15:00:00Z"}},
		// EST at the start, EDT (from 8 March) at the end
		{"quarter new york", Budget{Kind: Quarter}, "America/New_York", 1, "2026-03-10T12:00:00Z",
			[3]string{"2026-Q1", "2026-01-01T05:00:00Z", "2026-04-01T04:00:00Z"}},
		{"fiscal quarter", Budget{Kind: Quarter}, "UTC", 4, "2026-05-20T00:00:00Z",
			[3]string{"FY2026-Q1", "2026-04-01T00:00:00Z", "2026-07-01T00:00:00Z"}},
		{"fiscal quarter across new year", Budget{Kind: Quarter}, "UTC", 4, "2027-01-05T00:00:00Z",
			[3]string{"FY2026-Q4", "2027-01-01T00:00:00Z", "2027-04-01T00:00:00Z"}},
		{"fiscal year tokyo", Budget{Kind: FiscalYear}, "Asia/Tokyo", 4, "2027-02-01T00:00:00Z",
			[3]string{"FY2026", "2026-03-31T15:00:00Z", "2027-03-31T15:00:00Z"}},
		// the fiscal year's first day in Tokyo, before it in UTC
		{"fiscal year starts tokyo", Budget{Kind: FiscalYear}, "Asia/Tokyo", 4, "2026-03-31T15:00:00Z",
			[3]string{"FY2026", "2026-03-31T15:00:00Z", "2027-03-31T15:00:00Z"}},
		{"calendar fiscal year", Budget{Kind: FiscalYear}, "UTC", 1, "2026-12-31T23:59:59Z",
			[3]string{"FY2026", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"}},
		// DST ends on 1 November: the range starts in EDT, ends in EST
		{"range new york", rng, "America/New_York", 1, "2026-11-10T00:00:00Z",
			[3]string{"2026-11-01..2026-11-30", "2026-11-01T04:00:00Z", "2026-12-01T05:00:00Z"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.b.Period(utc(tc.now), zone(t, tc.zone), tc.fiscal)
			got := [3]string{p.Label, p.Start.UTC().Format(time.RFC3339), p.End.UTC().Format(time.RFC3339)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("period (-want +got):\n%s", diff)
			}
		})
	}
}

// days gives per units on each day from the first (a date in loc) for n
// days.
func days(loc *time.Location, first string, n int, per float64) []Day {
	d, err := time.ParseInLocation("2006-01-02", first, loc)
	if err != nil {
		panic(err)
	}
	var out []Day
	for i := 0; i < n; i++ {
		out = append(out, Day{Start: d.AddDate(0, 0, i), Used: per})
	}
	return out
}

func TestBurn(t *testing.T) {
	type want struct {
		Used, Left, Ratio, Elapsed, Pace, DaysLeft float64
		RunOut                                     string // UTC; "" not before the end
		Points                                     int
		LastIdeal                                  float64
	}
	round := func(x float64) float64 { return math.Round(x*1e6) / 1e6 }
	ny, tokyo := zone(t, "America/New_York"), zone(t, "Asia/Tokyo")
	for _, tc := range []struct {
		name   string
		b      Budget
		loc    *time.Location
		fiscal time.Month
		now    string
		days   []Day
		want   want
	}{
		// 300 GPU-hours in March, 10 a day for 10 days: 200 left at 10 a
		// day is 20 days, 31 March 00:00
		{"month utc runs out", Budget{Kind: Month, Amount: 300}, time.UTC, 1, "2026-03-11T00:00:00Z",
			days(time.UTC, "2026-03-01", 10, 10),
			want{Used: 100, Left: 200, Ratio: round(100.0 / 300), Elapsed: round(10.0 / 31), Pace: 10, DaysLeft: 20,
				RunOut: "2026-03-31T00:00:00Z", Points: 10, LastIdeal: round(300 * 10.0 / 31)}},
		// New York's March has 743 hours; the pace's 7 days (8 to 15
		// March) have 167: 168 GPU-hours in them is 168/167×24 a day.
		// 664 left lasts 660.05 hours, past 1 April: 17 days left.
		{"month new york dst", Budget{Kind: Month, Amount: 1000}, ny, 1, "2026-03-15T04:00:00Z",
			days(ny, "2026-03-01", 14, 24),
			want{Used: 336, Left: 664, Ratio: 0.336, Elapsed: round(335.0 / 743), Pace: round(168.0 / 167 * 24), DaysLeft: 17,
				Points: 14, LastIdeal: round(1000 * 335.0 / 743)}},
		// Q2 in Tokyo, 910 over 91 days, 20 a day through April: 310
		// left at 20 a day is 15.5 days, 16 May 12:00 JST
		{"quarter tokyo runs out", Budget{Kind: Quarter, Amount: 910}, tokyo, 1, "2026-04-30T15:00:00Z",
			days(tokyo, "2026-04-01", 30, 20),
			want{Used: 600, Left: 310, Ratio: round(600.0 / 910), Elapsed: round(30.0 / 91), Pace: 20, DaysLeft: 15.5,
				RunOut: "2026-05-16T03:00:00Z", Points: 30, LastIdeal: 300}},
		// nothing in the last 7 days: no pace, no run-out; 304 days to
		// 1 April 2027 in Tokyo
		{"fiscal year tokyo idle", Budget{Kind: FiscalYear, Amount: 5000}, tokyo, 4, "2026-05-31T15:00:00Z",
			days(tokyo, "2026-04-02", 1, 100),
			want{Used: 100, Left: 4900, Ratio: 0.02, Elapsed: round(61.0 / 365), DaysLeft: 304,
				Points: 61, LastIdeal: round(5000 * 61.0 / 365)}},
		// spent during 3 June: 80 before it, 40 in it, 100 reached half
		// way through
		{"range spent", Budget{Kind: Range, Amount: 100, From: civil{2026, 6, 1}, To: civil{2026, 6, 10}}, time.UTC, 1, "2026-06-04T00:00:00Z",
			days(time.UTC, "2026-06-01", 3, 40),
			want{Used: 120, Left: -20, Ratio: 1.2, Elapsed: 0.3, Pace: 40, RunOut: "2026-06-03T12:00:00Z", Points: 3, LastIdeal: 30}},
		// usage outside the period is not the period's
		{"range before it starts", Budget{Kind: Range, Amount: 100, From: civil{2026, 6, 1}, To: civil{2026, 6, 10}}, time.UTC, 1, "2026-05-20T00:00:00Z",
			days(time.UTC, "2026-05-15", 5, 40),
			want{Left: 100, DaysLeft: 10}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := tc.b.Period(utc(tc.now), tc.loc, tc.fiscal)
			bd := Burn(tc.b, p, utc(tc.now), tc.days)
			got := want{Used: round(bd.Used), Left: round(bd.Left), Ratio: round(bd.Ratio), Elapsed: round(bd.Elapsed),
				Pace: round(bd.Pace), DaysLeft: round(bd.DaysLeft), Points: len(bd.Line)}
			if bd.RunsOut() {
				got.RunOut = bd.RunOut.UTC().Format(time.RFC3339)
			}
			if n := len(bd.Line); n > 0 {
				got.LastIdeal = round(bd.Line[n-1].Ideal)
				if bd.Line[n-1].Used != bd.Used {
					t.Errorf("line ends at %v, used is %v", bd.Line[n-1].Used, bd.Used)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("burn-down (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCrossedOncePerPeriod(t *testing.T) {
	b := Budget{Account: "vision", Kind: Month, Amount: 100}
	p := b.Period(utc("2026-03-05T00:00:00Z"), time.UTC, 1)
	keys := map[string]int{}
	// the team crosses 50 % on the 5th, drops back (a job moved to
	// another account), and crosses it again on the 20th: one key
	for _, c := range []struct {
		now  string
		used float64
	}{{"2026-03-05T00:00:00Z", 55}, {"2026-03-10T00:00:00Z", 45}, {"2026-03-20T00:00:00Z", 60}} {
		bd := Burn(b, p, utc(c.now), []Day{{Start: p.Start, Used: c.used}})
		for _, w := range Crossed(bd, config.Default().Budget.Warn, true) {
			keys[w.Key]++
		}
	}
	// (55 in 4 days runs out on the 8th: warned once too)
	want := map[string]int{"budget/vision//2026-03-01T00/50": 2, "budget/vision//2026-03-01T00/runout": 1}
	if diff := cmp.Diff(want, keys); diff != "" {
		t.Errorf("keys (-want +got):\n%s", diff)
	}
	// the next month's 50 % is another key
	next := b.Period(utc("2026-04-02T00:00:00Z"), time.UTC, 1)
	ws := Crossed(Burn(b, next, utc("2026-04-02T00:00:00Z"), []Day{{Start: next.Start, Used: 90}}), config.Default().Budget.Warn, true)
	got := []string{}
	for _, w := range ws {
		got = append(got, w.Key)
	}
	if diff := cmp.Diff([]string{"budget/vision//2026-04-01T00/50", "budget/vision//2026-04-01T00/80", "budget/vision//2026-04-01T00/runout"}, got); diff != "" {
		t.Errorf("April's warnings (-want +got):\n%s", diff)
	}
}

func TestParseBadInput(t *testing.T) {
	known := func(a string) bool { return a == "vision" || a == "nlp" }
	ok := Entry{Account: "vision", Period: "month", Amount: 10}
	for _, tc := range []struct {
		name    string
		entries []Entry
		want    string
	}{
		{"unknown account", []Entry{ok, {Account: "ghost", Period: "month", Amount: 1}},
			`budget.entry[1] (ghost): account "ghost" is unknown (neither in the ledger nor in the teams file)`},
		{"zero amount", []Entry{{Account: "nlp", Period: "quarter"}}, `budget.entry[0] (nlp): amount 0 is not positive`},
		{"negative amount", []Entry{{Account: "nlp", User: "bob", Period: "quarter", Amount: -5}}, `budget.entry[0] (nlp/bob): amount -5 is not positive`},
		{"overlapping recurring", []Entry{ok, {Account: "vision", Period: "quarter", Amount: 10}},
			`budget.entry[1] (vision): its period overlaps budget.entry[0]'s: one budget per account and user at a time`},
		{"overlapping ranges", []Entry{
			{Account: "nlp", Period: "range", From: "2026-01-01", To: "2026-03-31", Amount: 1},
			{Account: "nlp", Period: "range", From: "2026-03-31", To: "2026-06-30", Amount: 1}},
			`budget.entry[1] (nlp): its period overlaps budget.entry[0]'s: one budget per account and user at a time`},
		{"bad date", []Entry{{Account: "nlp", Period: "range", From: "2026-02-30", To: "2026-03-31", Amount: 1}},
			`budget.entry[0] (nlp): from: "2026-02-30" is not a date such as 2026-04-01`},
		{"reversed range", []Entry{{Account: "nlp", Period: "range", From: "2026-03-01", To: "2026-02-01", Amount: 1}},
			`budget.entry[0] (nlp): to 2026-02-01 is before from 2026-03-01`},
		{"dates on a month", []Entry{{Account: "nlp", Period: "month", From: "2026-03-01", Amount: 1}},
			`budget.entry[0] (nlp): from and to are for period "range" only`},
		{"bad period", []Entry{{Account: "nlp", Period: "week", Amount: 1}},
			`budget.entry[0] (nlp): period "week" is not month, quarter, fiscal-year or range`},
		{"bad unit", []Entry{{Account: "nlp", Period: "month", Amount: 1, Unit: "euro"}},
			`budget.entry[0] (nlp): unit "euro" is not gpu-hours or billing`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse(tc.entries, known)
			if err == nil {
				t.Fatal("no error")
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" || strings.Contains(err.Error(), "\n") {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
	// the same account's user, and ranges that only touch, are fine
	bs, err := Parse([]Entry{ok, {Account: "Vision", User: "alice", Period: "month", Amount: 5},
		{Account: "nlp", Period: "range", From: "2026-01-01", To: "2026-03-31", Amount: 1},
		{Account: "nlp", Period: "range", From: "2026-04-01", To: "2026-06-30", Amount: 1, Unit: "billing"}}, known)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"nlp", "vision"}, Accounts(bs)); diff != "" {
		t.Errorf("accounts (-want +got):\n%s", diff)
	}
}
