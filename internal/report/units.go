package report

import (
	"math"
	"strconv"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/table"
)

// Metric values in their units, by the unit the name ends in
// (record.Catalogue: units last), each to its unit's precision for
// people (table.Unit): the job report's table and the samples export's
// --human.

// HumanMetric is v of metric name in its unit for people: "78.3 %",
// "1.2 GB/s", "1410 MHz", "312.5 W", "71 °C", "12.3 GiB", "1.235 MJ";
// a name without a known unit gives the number alone.
func HumanMetric(name string, v float64) string {
	if s, ok := humanMetric(name, v); ok {
		return s
	}
	return Decimal(v, table.NoUnit.HumanPlaces())
}

// humanMetric is HumanMetric for a name whose unit it knows; ok is false
// for any other.
func humanMetric(name string, v float64) (s string, ok bool) {
	u := table.UnitOf(name)
	p := u.HumanPlaces()
	switch u {
	case table.UnitPercent:
		return Decimal(v, p) + " %", true
	case table.UnitBytesPerSecond:
		return scaled(v, 1000, []string{"B/s", "kB/s", "MB/s", "GB/s", "TB/s", "PB/s"}, p), true
	case table.UnitMHz:
		return Decimal(v, p) + " MHz", true
	case table.UnitWatts:
		return Decimal(v, p) + " W", true
	case table.UnitCelsius:
		return Decimal(v, p) + " °C", true
	case table.UnitMiB:
		return Decimal(v/1024, p) + " GiB", true
	case table.UnitMillijoules:
		// The energy counter reads in mJ; people read J, kJ, MJ.
		return scaled(v/1000, 1000, []string{"J", "kJ", "MJ", "GJ", "TJ"}, 3), true
	case table.UnitSeconds:
		return Decimal(v, p) + " s", true
	}
	return "", false
}

// scaled is v in the largest of units (each step times larger than the
// one before) that leaves it at least 1: the first unit whole, the
// others to places decimals ("1.2 GB/s", "512 J", "1.235 MJ").
func scaled(v, step float64, units []string, places int) string {
	i := 0
	for math.Abs(v) >= step && i < len(units)-1 {
		v /= step
		i++
	}
	if i == 0 {
		return Decimal(v, 0) + " " + units[0]
	}
	return Decimal(v, places) + " " + units[i]
}

// Decimal is v rounded to places decimals and written without float
// noise or trailing zeros (756.5999999999998 → "756.6", 3.0 → "3").
func Decimal(v float64, places int) string {
	return strconv.FormatFloat(table.Round(v, places), 'f', -1, 64)
}

// catalogueRank is name's place in record.Catalogue, past the end when
// the catalogue lacks it.
func catalogueRank(name string) int {
	for i, m := range record.Catalogue {
		if m.Name == name {
			return i
		}
	}
	return len(record.Catalogue)
}
