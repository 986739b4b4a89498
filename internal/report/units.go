package report

import (
	"math"
	"strconv"
	"strings"

	"github.com/aicloud/gpusuite/internal/record"
)

// Metric values in their units, by the unit the name ends in
// (record.Catalogue: units last): the job report's table and the samples
// export's --human.

// HumanMetric is v of metric name in its unit for people: "78.3 %",
// "1.2 GB/s", "1410 MHz", "312 W", "71 °C", "12.3 GiB"; a name without a
// known unit gives the number alone.
func HumanMetric(name string, v float64) string {
	if s, ok := humanMetric(name, v); ok {
		return s
	}
	return Decimal(v, 2)
}

// humanMetric is HumanMetric for a name whose unit it knows; ok is false
// for any other.
func humanMetric(name string, v float64) (s string, ok bool) {
	switch {
	case strings.HasSuffix(name, "_pct"):
		return Decimal(v, 1) + " %", true
	case strings.HasSuffix(name, "_bytes_per_s"):
		return humanBytes(v) + "/s", true
	case strings.HasSuffix(name, "_mhz"):
		return Decimal(v, 0) + " MHz", true
	case strings.HasSuffix(name, "_w"):
		return Decimal(v, 0) + " W", true
	case strings.HasSuffix(name, "_c"):
		return Decimal(v, 0) + " °C", true
	case strings.HasSuffix(name, "_mib"):
		return Decimal(v/1024, 1) + " GiB", true
	}
	return "", false
}

// humanBytes is n bytes in decimal units (GB, as link speeds are given).
func humanBytes(n float64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB"}
	i := 0
	for math.Abs(n) >= 1000 && i < len(units)-1 {
		n /= 1000
		i++
	}
	if i == 0 {
		return Decimal(n, 0) + " B"
	}
	return Decimal(n, 1) + " " + units[i]
}

// Decimal is v rounded to places decimals and written without float
// noise or trailing zeros (756.5999999999998 → "756.6", 3.0 → "3").
func Decimal(v float64, places int) string {
	r := roundTo(v, places)
	if r == 0 {
		r = 0 // no "-0"
	}
	return strconv.FormatFloat(r, 'f', -1, 64)
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
