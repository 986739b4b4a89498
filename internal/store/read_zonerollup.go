package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
)

// ZoneRollupsSchema is the first schema with rollup_zone_day and
// rollup_zone_week.
const ZoneRollupsSchema = 26

// ZoneMark is what the zone rollups hold: the zone they are in and the
// Unix hour before which every hour is in them (Before 0: none yet).
type ZoneMark struct {
	TZ     string
	Before int64
}

// Covers says whether the zone rollups hold every hour that starts
// before the Unix second end, in the zone named tz.
func (m ZoneMark) Covers(tz string, end int64) bool {
	return m.TZ != "" && m.TZ == tz && (end+3599)/3600 <= m.Before
}

// ZoneRollups reads the zone rollups' mark (meta zone_rollups_tz,
// zone_rollups_before).
func (s *Ledger) ZoneRollups(ctx context.Context) (ZoneMark, error) {
	return readZoneMark(translateRows(s.db.QueryContext(ctx, zoneMarkSQL, zoneTZKey, zoneBeforeKey)))
}

// zoneMarkSQL reads the mark's meta rows; readZoneMark parses them.
const zoneMarkSQL = `SELECT key, value FROM meta WHERE key IN (?, ?)`

func readZoneMark(rows batchRows, err error) (ZoneMark, error) {
	var tz, before sql.NullString
	err = eachRow(rows, err, func(r batchRows) error {
		var k, v string
		if err := r.Scan(&k, &v); err != nil {
			return err
		}
		if k == zoneTZKey {
			tz = sql.NullString{String: v, Valid: true}
		} else {
			before = sql.NullString{String: v, Valid: true}
		}
		return nil
	})
	if err != nil {
		return ZoneMark{}, fmt.Errorf("zone rollups mark: %w", err)
	}
	if !tz.Valid || !before.Valid {
		return ZoneMark{}, nil
	}
	n, err := strconv.ParseInt(before.String, 10, 64)
	if err != nil {
		return ZoneMark{}, fmt.Errorf("meta %s: %q: %w", zoneBeforeKey, before.String, err)
	}
	return ZoneMark{TZ: tz.String, Before: n}, nil
}

// ZoneFacts calls fn for each row q selects from the zone rollups
// (q.Grain ZoneDaily or ZoneWeekly; From and To the first seconds of
// local days or weeks in q.ZoneTZ): Facts' rows, a row a key and day or
// week, Start its first second; Keep is honoured as Facts does. The
// caller planned by the mark (ZoneRollups); read again here, in the
// caller's snapshot, it must still cover the range: the rollups started
// again in another zone meanwhile are an error, not rows missing.
func (s *Ledger) ZoneFacts(ctx context.Context, q FactQuery, fn func(*FactRow)) error {
	switch {
	case q.Grain != ZoneDaily && q.Grain != ZoneWeekly:
		return errors.New("zone rollups: they keep local days and weeks only")
	case q.ByNode || len(q.NodeIDs) > 0:
		return errors.New("zone rollups: they keep no node")
	}
	m, err := s.ZoneRollups(ctx)
	if err != nil {
		return err
	}
	if !m.Covers(q.ZoneTZ, q.To) {
		return fmt.Errorf("zone rollups: now in %q before hour %d, not holding %s up to %d: they were started again; run the report again", m.TZ, m.Before, q.ZoneTZ, q.To)
	}
	return s.Facts(ctx, q, fn)
}
