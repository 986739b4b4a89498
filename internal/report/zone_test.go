package report

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// keepZoneRollups runs the ledger's housekeeping step of the zone
// rollups in zone until every hour is in them.
func keepZoneRollups(t *testing.T, path string, now int64, zone string) {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), store.At(path))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for pass := 0; ; pass++ {
		b, err := st.Begin(context.Background(), time.Unix(now, 0))
		if err != nil {
			t.Fatal(err)
		}
		if err := b.KeepZoneRollups(loc); err != nil {
			b.Rollback()
			t.Fatal(err)
		}
		if err := b.Commit(); err != nil {
			t.Fatal(err)
		}
		m, err := st.ZoneRollups(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if m.TZ == zone && m.Before > now/3600+1 {
			return
		}
		if pass > 100 {
			t.Fatalf("the zone rollups in %s are not filled after %d passes: %+v", zone, pass, m)
		}
	}
}

// TestZoneRollupsEqualPlan: with the zone rollups kept in the site's zone
// (one with a whole-hour, a half-hour, and a half-hour offset with DST),
// every report by team, user, account, top and tree, by day, week or in
// one bucket, over random windows, prints what the plan without them
// prints; a report in another zone reads none of them, one in the site's
// zone reads them for its whole days and weeks.
func TestZoneRollupsEqualPlan(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(35, 26))
	jobs, base, now := pScenario(r)
	path := buildSampledLedger(t, jobs, now)
	kinds := []string{"teams", "users", "accounts", "top", "tree"}
	periods := []timespec.Period{timespec.Day, timespec.Week, timespec.None}
	for _, site := range []string{"Asia/Tokyo", "Asia/Kolkata", "America/St_Johns"} {
		t.Run(site, func(t *testing.T) {
			keepZoneRollups(t, path, now, site)
			ref, fast := openTest(t, path), openTest(t, path)
			ref.zoneRollups = false
			if !fast.zoneRollups {
				t.Fatal("a new ledger has no zone rollups")
			}
			read := map[grain]int{}
			fast.handed = func(g grain) { read[g]++ }
			for i := range 12 {
				// Half the reports in the site's zone, the others in
				// UTC or another site's zone: those read no zone rollup.
				zone := site
				if i%2 == 1 {
					zone = []string{"UTC", "Asia/Tokyo", "America/St_Johns"}[i/2%3]
				}
				loc, err := time.LoadLocation(zone)
				if err != nil {
					t.Fatal(err)
				}
				var w timespec.Window
				if i%4 == 0 {
					d := time.Unix(base, 0).In(loc)
					start := time.Date(d.Year(), d.Month(), d.Day()+r.IntN(5), 0, 0, 0, 0, loc)
					w = timespec.Window{Start: start, End: start.AddDate(0, 0, 7*(1+r.IntN(4)))}
				} else {
					lo := base - 2*86400 + r.Int64N(10*86400)
					hi := now + 2*86400 - r.Int64N(10*86400)
					w = HourWindow(timespec.Window{Start: time.Unix(lo, 0).In(loc), End: time.Unix(hi, 0).In(loc)})
				}
				p := periods[i%len(periods)]
				before := read[zoneDay] + read[zoneWeek]
				for _, kind := range kinds {
					name := fmt.Sprintf("%s %s – %s %s %s", zone, w.Start.Format(time.DateTime), w.End.Format(time.DateTime), periodName(p), kind)
					req := Request{Kind: kind, Window: w, Period: p}
					want, err := ref.Report(ctx, req)
					if err != nil {
						t.Fatalf("%s, without zone rollups: %v", name, err)
					}
					got, err := fast.Report(ctx, req)
					if err != nil {
						t.Fatalf("%s, with zone rollups: %v", name, err)
					}
					if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-6)); d != "" {
						t.Errorf("%s (-without zone rollups +with):\n%s", name, d)
					}
				}
				if zone != site && read[zoneDay]+read[zoneWeek] != before {
					t.Errorf("a report in %s read the zone rollups kept in %s", zone, site)
				}
			}
			if read[zoneDay] == 0 || read[zoneWeek] == 0 {
				t.Errorf("rows read by grain %v: the test misses the zone rollups by day or by week", read)
			}
			if site == "Asia/Tokyo" {
				zoneMarkHonoured(t, ref, fast, path, base, now)
			}
		})
	}
}

// zoneMarkHonoured: with the mark moved back to a Monday midnight in
// Asia/Tokyo (whole hours: every row lies wholly before or after it) and
// every row after it spoiled, reports by day and week still print what
// the plan without zone rollups prints: no bucket past the mark is read
// from them, and those before it still are.
func zoneMarkHonoured(t *testing.T, ref, fast *Ledger, path string, base, now int64) {
	t.Helper()
	loc, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	d := time.Unix((base+now)/2, 0).In(loc)
	mid := time.Date(d.Year(), d.Month(), d.Day()-(int(d.Weekday())+6)%7, 0, 0, 0, 0, loc)
	ledgerdb.Exec(t, path, `UPDATE meta SET value = ? WHERE key = 'zone_rollups_before'`, strconv.FormatInt(mid.Unix()/3600, 10))
	for _, table := range []string{"rollup_zone_day", "rollup_zone_week"} {
		if n := ledgerdb.Exec(t, path, `UPDATE `+table+` SET alloc_gpu_s = alloc_gpu_s + 3600000 WHERE start >= ?`, mid.Unix()); n == 0 {
			t.Fatalf("%s: no row after %s to spoil", table, mid)
		}
	}
	read := map[grain]int{}
	fast.handed = func(g grain) { read[g]++ }
	w := timespec.Window{Start: mid.AddDate(0, 0, -14), End: mid.AddDate(0, 0, 14)}
	for _, p := range []timespec.Period{timespec.Day, timespec.Week} {
		req := Request{Kind: "teams", Window: w, Period: p}
		want, err := ref.Report(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		got, err := fast.Report(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-6)); d != "" {
			t.Errorf("mark at %s, by %s (-without zone rollups +with):\n%s", mid, periodName(p), d)
		}
	}
	if read[zoneDay] == 0 || read[zoneWeek] == 0 {
		t.Errorf("mark at %s: rows read by grain %v: the days and weeks before it are not read from the zone rollups", mid, read)
	}
}

// TestZoneRollupsRestartedAfterPlan: a plan made from the zone rollups
// that are then started again in another zone (report.tz changed) errs
// when it reads them, rather than reading their emptied rows.
func TestZoneRollupsRestartedAfterPlan(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(35, 27))
	jobs, base, now := pScenario(r)
	path := buildSampledLedger(t, jobs, now)
	keepZoneRollups(t, path, now, "Asia/Tokyo")
	db := openTest(t, path)
	loc, err := time.LoadLocation("Asia/Tokyo")
	if err != nil {
		t.Fatal(err)
	}
	d := time.Unix(base, 0).In(loc)
	start := time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, loc)
	bs := timespec.Buckets(timespec.Window{Start: start, End: start.AddDate(0, 0, 14)}, timespec.Week)
	fp, err := db.planFacts(ctx, bs, Filter{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if fp.zoneTZ != "Asia/Tokyo" {
		t.Fatalf("plan %+v reads no zone rollups", fp)
	}
	keepZoneRollups(t, path, now, "Asia/Kolkata")
	err = db.readFacts(ctx, fp, func(*Fact) {})
	if err == nil || !strings.Contains(err.Error(), "started again") {
		t.Errorf("read after the zone rollups started again: %v, want an error saying so", err)
	}
}
