package store

import (
	"database/sql"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// zoneKey is a zone rollup key as the tests compare it.
type zoneKey struct {
	Start                                    int64
	Cluster, User, Account, Partition, Model string
	Ignored                                  int64
}

// zoneTestZones: whole-hour and half-hour offsets, one with DST inside
// invScenario's window (Europe/London, 2026-03-29 01:00 UTC), one whose
// midnight lies at :30 UTC with DST (America/St_Johns).
var zoneTestZones = []string{"Asia/Tokyo", "Asia/Kolkata", "America/St_Johns", "Europe/London"}

// zoneRowsOf reads q's rows (zoneKey's columns, then Usage's), leaving
// out the (about) zero ones, as modelRows does.
func zoneRowsOf(t *testing.T, s *Ledger, q string, args ...any) map[zoneKey]Usage {
	t.Helper()
	rows, err := s.db.Query(q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[zoneKey]Usage{}
	for rows.Next() {
		var k zoneKey
		var u Usage
		if err := rows.Scan(&k.Start, &k.Cluster, &k.User, &k.Account, &k.Partition, &k.Model, &k.Ignored,
			&u.AllocS, &u.UsedS, &u.IdleS, &u.SampleS, &u.EnergyMJ, &u.Jobs, &u.Billing); err != nil {
			t.Fatal(err)
		}
		if !cmp.Equal(u, Usage{}, approx) {
			out[k] = u
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// zoneMarkOf reads the zone and mark from meta ("" and 0 when unset).
func zoneMarkOf(t *testing.T, s *Ledger) (string, int64) {
	t.Helper()
	var tz, before sql.NullString
	if err := s.db.QueryRow(`SELECT max(value) FROM meta WHERE key = ?`, zoneTZKey).Scan(&tz); err != nil {
		t.Fatal(err)
	}
	if err := s.db.QueryRow(`SELECT max(value) FROM meta WHERE key = ?`, zoneBeforeKey).Scan(&before); err != nil {
		t.Fatal(err)
	}
	if !before.Valid {
		return tz.String, 0
	}
	n, err := strconv.ParseInt(before.String, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return tz.String, n
}

// checkZoneRollup holds the zone tables to rollup_hourly_sum's hours
// before the mark summed by the report's own buckets (timespec.Buckets
// by day and by week in the zone: an hour counts in the bucket its start
// lies in), every figure.
func checkZoneRollup(t *testing.T, s *Ledger, zone, when string) {
	t.Helper()
	tz, before := zoneMarkOf(t, s)
	if tz != zone {
		t.Fatalf("%s: zone rollups in %q, want %q", when, tz, zone)
	}
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	hours := zoneRowsOf(t, s, `SELECT hour, cluster, user, account, partition, model, ignored,
 alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing FROM rollup_hourly_sum WHERE hour < ?`, before)
	if len(hours) == 0 && before < zoneAll {
		return
	}
	lo, hi := int64(1<<62), int64(0)
	for k := range hours {
		lo, hi = min(lo, k.Start), max(hi, k.Start)
	}
	w := timespec.Window{Start: time.Unix(lo*3600-8*86400, 0).In(loc), End: time.Unix(hi*3600+8*86400, 0).In(loc)}
	for _, p := range []struct {
		table  string
		period timespec.Period
	}{{"rollup_zone_day", timespec.Day}, {"rollup_zone_week", timespec.Week}} {
		bs := timespec.Buckets(w, p.period)
		want := map[zoneKey]Usage{}
		for k, u := range hours {
			at := k.Start * 3600
			i := 0
			for i < len(bs) && !bs[i].End.After(time.Unix(at, 0)) {
				i++
			}
			k.Start = bs[i].Start.Unix()
			sum := want[k]
			sum.Add(u)
			want[k] = sum
		}
		got := zoneRowsOf(t, s, `SELECT start, cluster, user, account, partition, model, ignored,
 alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing FROM `+p.table)
		if d := cmp.Diff(want, got, approx); d != "" {
			t.Errorf("%s: %s in %s is not rollup_hourly_sum before hour %d summed (-want +got):\n%s", when, p.table, zone, before, d)
		}
	}
}

// fillZones runs housekeeping passes in zone until the mark is zoneAll,
// checking the tables after each, and returns how many passes it took.
func fillZones(t *testing.T, s *Ledger, now time.Time, zone string) int {
	t.Helper()
	loc, err := time.LoadLocation(zone)
	if err != nil {
		t.Fatal(err)
	}
	last := int64(-1)
	for pass := 1; ; pass++ {
		batchOf(t, s, now, func(b *Batch) error { return b.KeepZoneRollups(loc) })
		checkZoneRollup(t, s, zone, fmt.Sprint("pass ", pass))
		_, before := zoneMarkOf(t, s)
		if before == zoneAll {
			return pass
		}
		if before <= last {
			t.Fatalf("pass %d: the mark did not move from %d", pass, last)
		}
		last = before
	}
}

// smallZoneSteps makes the fill take a few hours and rows a pass.
func smallZoneSteps(t *testing.T) {
	hours, rows := zoneStepHours, zonePassRows
	zoneStepHours, zonePassRows = 3, 5
	t.Cleanup(func() { zoneStepHours, zonePassRows = hours, rows })
}

// TestZoneRollupFill: the housekeeping step fills the zone tables pass by
// pass, exact at every mark; writes between passes (a job ignored, hours
// on either side of the mark) keep them exact; a new zone starts them
// again.
func TestZoneRollupFill(t *testing.T) {
	smallZoneSteps(t)
	for i, zone := range zoneTestZones {
		t.Run(zone, func(t *testing.T) {
			s, now := modelHistory(t, uint64(i+1))
			if tz, _ := zoneMarkOf(t, s); tz != "" {
				t.Fatalf("zone rollups in %q before any housekeeping", tz)
			}
			loc, err := time.LoadLocation(zone)
			if err != nil {
				t.Fatal(err)
			}
			// Two passes, then a job ignored across the mark.
			for pass := 0; pass < 2; pass++ {
				batchOf(t, s, now, func(b *Batch) error { return b.KeepZoneRollups(loc) })
			}
			_, mid := zoneMarkOf(t, s)
			if mid == zoneAll {
				t.Fatal("two passes filled every hour: the test misses a mark inside the hours")
			}
			checkZoneRollup(t, s, zone, "after two passes")
			var job int64
			if err := s.db.QueryRow(`SELECT min(job) FROM job_hours WHERE hour < ? AND job IN (SELECT job FROM job_hours WHERE hour >= ?)`, mid, mid).Scan(&job); err != nil {
				t.Fatalf("no job across the mark %d: %v", mid, err)
			}
			batchOf(t, s, now, func(b *Batch) error { return b.SetIgnored(job, true, "test") })
			checkZoneRollup(t, s, zone, "after ignoring a job across the mark")
			if passes := fillZones(t, s, now, zone); passes < 2 {
				t.Errorf("filled in %d passes: the test misses the steps", passes)
			}
			batchOf(t, s, now, func(b *Batch) error { return b.SetIgnored(job, false, "") })
			checkZoneRollup(t, s, zone, "after counting it again")
			other := zoneTestZones[(i+1)%len(zoneTestZones)]
			fillZones(t, s, now, other)
		})
	}
}

// TestZoneRollupFollowsWriter: with the tables filled (an empty ledger's
// mark is at once zoneAll), the writer alone keeps them through samples,
// ends that move a job's rollups, ignoring and extending; KeepZoneRollups
// in the same zone then changes nothing.
func TestZoneRollupFollowsWriter(t *testing.T) {
	for i, zone := range zoneTestZones {
		t.Run(zone, func(t *testing.T) {
			loc, err := time.LoadLocation(zone)
			if err != nil {
				t.Fatal(err)
			}
			s := openTemp(t)
			start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
			batchOf(t, s, start, func(b *Batch) error { return b.KeepZoneRollups(loc) })
			if tz, before := zoneMarkOf(t, s); tz != zone || before != zoneAll {
				t.Fatalf("empty ledger: zone %q mark %d, want %q and every hour", tz, before, zone)
			}
			now := writeModelHistory(t, s, uint64(i+1), func(when string) {
				checkModelRollup(t, s, when)
				checkZoneRollup(t, s, zone, when)
			})
			var n int
			if err := s.db.QueryRow(`SELECT count(*) FROM rollup_zone_week`).Scan(&n); err != nil || n == 0 {
				t.Fatalf("rollup_zone_week: %d rows, %v: the test compares nothing", n, err)
			}
			batchOf(t, s, now, func(b *Batch) error { return b.KeepZoneRollups(loc) })
			checkZoneRollup(t, s, zone, "after housekeeping")
		})
	}
}

// TestZoneStartsLocal: a zone without a name another process could load
// keeps no tables.
func TestZoneStartsLocal(t *testing.T) {
	s, now := modelHistory(t, 1)
	batchOf(t, s, now, func(b *Batch) error { return b.KeepZoneRollups(time.Local) })
	if tz, before := zoneMarkOf(t, s); tz != "" || before != 0 {
		t.Errorf("Local: zone %q mark %d, want none", tz, before)
	}
}
