package report

import (
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// zoneCover says which buckets of bs the zone rollups (mark m) hold
// exactly, and as which piece: a bucket that is one whole local day or
// ISO week of the ledger's zone, whose hours are all before the mark. Its
// rows are then one set a key, with no edge hours and nothing subtracted.
// A report in another zone, or a bucket cut by the window, reads as
// before.
func zoneCover(bs []timespec.Bucket, m store.ZoneMark) func(i int) (piece, bool) {
	return func(i int) (piece, bool) {
		b := bs[i]
		loc := b.Start.Location()
		a, e := b.Start.Unix(), b.End.Unix()
		if !m.Covers(loc.String(), e) {
			return piece{}, false
		}
		// The window's end takes the hour it cuts from the last bucket
		// (spanHours); the day or week in the rollups holds it.
		if i == len(bs)-1 && e%3600 != 0 {
			return piece{}, false
		}
		// Both edges are keys of the table and nothing lies between: an
		// edge moved by a clock change at midnight is no key.
		da, wa := store.ZoneStarts(loc, a)
		de, we := store.ZoneStarts(loc, e)
		dl, wl := store.ZoneStarts(loc, e-1)
		switch {
		case da == a && de == e && dl == a:
			return piece{grain: zoneDay, from: a, to: e}, true
		case wa == a && we == e && wl == a:
			return piece{grain: zoneWeek, from: a, to: e}, true
		}
		return piece{}, false
	}
}
