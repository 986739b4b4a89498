package store

import (
	"database/sql"
	"fmt"
	"strconv"
	"time"
)

// The zone rollups (schema 26): rollup_hourly_sum summed by the local days
// and ISO weeks of one zone, so that a report in that zone reads a whole
// day or week as one set of rows. The zone is the ledger's, in meta, not
// the writer's configuration: every writer (ingest, `gpuacct ignore`,
// notes) keeps the tables in the zone they were filled in, and only the
// housekeeping step (KeepZoneRollups), given the site's zone, fills them
// or starts them again in another zone.
const (
	// zoneTZKey names the zone the tables are in.
	zoneTZKey = "zone_rollups_tz"
	// zoneBeforeKey is a Unix hour: the hours before it are in the
	// tables, those from it on not yet (the housekeeping step adds them).
	zoneBeforeKey = "zone_rollups_before"
	// zoneAll is the mark once every hour is in: the writer keeps them.
	zoneAll = int64(1) << 40
)

// zoneStepHours is how many hours of rollup_hourly_sum one read of the
// housekeeping step sums; zonePassRows bounds the rows one pass reads
// (the writer is held a bounded time; the next pass goes on). Variables
// so that a test can walk the fill in small steps.
var (
	zoneStepHours int64 = 24
	zonePassRows        = 200_000
)

// zoneState is the batch's copy of the zone mark, read once.
type zoneState struct {
	known  bool
	loc    *time.Location // nil: no zone tables kept
	before int64
}

// ZoneStarts are the Unix seconds of the local midnight and the Monday
// 00:00 (ISO week) at or before the Unix second t in loc: the keys of the
// zone rollups' rows for an hour starting at t. They are computed as
// timespec.Buckets cuts a window, so that a zone whose midnight is off the
// hour, or moved by DST, agrees with the report's buckets (an hour counts
// in the bucket its start lies in).
func ZoneStarts(loc *time.Location, t int64) (day, week int64) {
	lt := time.Unix(t, 0).In(loc)
	d := time.Date(lt.Year(), lt.Month(), lt.Day(), 0, 0, 0, 0, loc)
	w := d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
	return d.Unix(), w.Unix()
}

// zoneMark is the zone mark as the batch sees it.
func (b *Batch) zoneMark() (zoneState, error) {
	if b.zone.known {
		return b.zone, nil
	}
	m, err := readZoneMark(b.query(zoneMarkSQL, zoneTZKey, zoneBeforeKey))
	if err != nil {
		return zoneState{}, err
	}
	st := zoneState{known: true, before: m.Before}
	if m.TZ != "" {
		if st.loc, err = time.LoadLocation(m.TZ); err != nil {
			return zoneState{}, fmt.Errorf("zone rollups zone %q: %w", m.TZ, err)
		}
	}
	b.zone = st
	return st, nil
}

// zoneRollups sums hourly deltas into rollup_zone_day's and
// rollup_zone_week's rows (periodKey.at: the day's or week's start).
type zoneRollups [2]usageSums[periodKey]

func (z *zoneRollups) add(loc *time.Location, dims Dims, model string, hour int64, d Usage) {
	day, week := ZoneStarts(loc, hour*3600)
	z[0].add(periodKey{dims, day, model}, d)
	z[1].add(periodKey{dims, week, model}, d)
}

func (z *zoneRollups) write(b *Batch) error {
	for i, table := range []string{"rollup_zone_day", "rollup_zone_week"} {
		if err := b.execMany(rollupPeriodSQL(table, "start"), z[i].rows(true, func(k periodKey, d Usage) []any {
			return rollupPeriodRow(k.dims, k.model, k.at, d)
		})); err != nil {
			return err
		}
	}
	return nil
}

// rollupZones adds the hours of rollup_hourly_sum's deltas (keyed by
// hour) that lie before the zone mark to the zone tables: those from it
// on are the housekeeping step's to add.
func (b *Batch) rollupZones(hours *usageSums[periodKey]) error {
	st, err := b.zoneMark()
	if err != nil || st.loc == nil {
		return err
	}
	var z zoneRollups
	for _, k := range hours.order {
		if k.at < st.before {
			z.add(st.loc, k.dims, k.model, k.at, *hours.sums[k])
		}
	}
	return z.write(b)
}

// rollupZone is rollupZones of one delta.
func (b *Batch) rollupZone(dims Dims, model string, hour int64, d Usage) error {
	if d == (Usage{}) {
		return nil
	}
	var one usageSums[periodKey]
	one.add(periodKey{dims, hour, model}, d)
	return b.rollupZones(&one)
}

// KeepZoneRollups is the housekeeping step of the zone rollups in loc, the
// site's report zone: tables in another zone are emptied and started
// again; then a bounded run of hours from rollup_hourly_sum is summed into
// them and the mark moved past it, in the batch's transaction, so that
// readers see either side whole. Once the mark passes the newest hour it
// becomes zoneAll and the writer alone keeps the tables. loc "Local" (a
// zone without a name another process could load) keeps none.
func (b *Batch) KeepZoneRollups(loc *time.Location) error {
	if loc == nil || loc.String() == "Local" {
		return nil
	}
	st, err := b.zoneMark()
	if err != nil {
		return err
	}
	if st.loc == nil || st.loc.String() != loc.String() {
		if st, err = b.restartZones(loc); err != nil {
			return err
		}
	}
	before, read := st.before, 0
	for before < zoneAll && read < zonePassRows {
		to := before + zoneStepHours
		n, err := b.addZoneHours(loc, before, to)
		if err != nil {
			return err
		}
		read += n
		// The next hour with rows: a gap (no jobs) is crossed in one
		// read, and with none left every hour is in.
		next, err := b.firstHourFrom(to)
		if err != nil {
			return err
		}
		before = zoneAll
		if next.Valid {
			before = max(to, next.Int64)
		}
	}
	if before == st.before {
		return nil
	}
	return b.setZoneMark(loc, before)
}

// restartZones empties the zone tables and sets the mark to the oldest
// hour of rollup_hourly_sum in loc (zoneAll when there is none).
func (b *Batch) restartZones(loc *time.Location) (zoneState, error) {
	for _, q := range []string{`DELETE FROM rollup_zone_day`, `DELETE FROM rollup_zone_week`} {
		if _, err := b.exec(q); err != nil {
			return zoneState{}, fmt.Errorf("restart zone rollups in %s: %w", loc, err)
		}
	}
	first, err := b.firstHourFrom(0)
	if err != nil {
		return zoneState{}, err
	}
	before := zoneAll
	if first.Valid {
		before = first.Int64
	}
	if err := b.setZoneMark(loc, before); err != nil {
		return zoneState{}, err
	}
	return b.zone, nil
}

// setZoneMark stores the zone and its mark, and the batch's copy.
func (b *Batch) setZoneMark(loc *time.Location, before int64) error {
	const set = `INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`
	if _, err := b.exec(set, zoneTZKey, loc.String()); err != nil {
		return fmt.Errorf("zone rollups mark: %w", err)
	}
	if _, err := b.exec(set, zoneBeforeKey, strconv.FormatInt(before, 10)); err != nil {
		return fmt.Errorf("zone rollups mark: %w", err)
	}
	b.zone = zoneState{known: true, loc: loc, before: before}
	return nil
}

// firstHourFrom is the oldest hour of rollup_hourly_sum from hour on.
func (b *Batch) firstHourFrom(hour int64) (sql.NullInt64, error) {
	var first sql.NullInt64
	rows, err := b.query(`SELECT min(hour) FROM rollup_hourly_sum WHERE hour >= ?`, hour)
	err = eachRow(rows, err, func(r batchRows) error { return r.Scan(&first) })
	if err != nil {
		return first, fmt.Errorf("oldest rollup hour from %d: %w", hour, err)
	}
	return first, nil
}

// addZoneHours sums rollup_hourly_sum's hours [from, to) into the zone
// tables in loc and returns how many rows it read. The pending deltas of
// the batch (flushUse) are not in the rows read: they go to the tables
// when they are flushed, their hours then before the mark.
func (b *Batch) addZoneHours(loc *time.Location, from, to int64) (int, error) {
	rows, err := b.query(`SELECT hour, cluster, user, account, partition, model, ignored,
 alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing FROM rollup_hourly_sum WHERE hour >= ? AND hour < ?`, from, to)
	var z zoneRollups
	n := 0
	err = eachRow(rows, err, func(r batchRows) error {
		var k periodKey
		var d Usage
		if err := r.Scan(&k.at, &k.dims.Cluster, &k.dims.User, &k.dims.Account, &k.dims.Partition, &k.model, &k.dims.Ignored,
			&d.AllocS, &d.UsedS, &d.IdleS, &d.SampleS, &d.EnergyMJ, &d.Jobs, &d.Billing); err != nil {
			return err
		}
		z.add(loc, k.dims, k.model, k.at, d)
		n++
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("rollup hours [%d, %d): %w", from, to, err)
	}
	return n, z.write(b)
}
