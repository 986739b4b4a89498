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
// "1.2 GB/s", "1410 MHz", "312 W", "71 °C"; a name without a known unit
// gives the number alone.
func HumanMetric(name string, v float64) string {
	switch {
	case strings.HasSuffix(name, "_pct"):
		return Decimal(v, 1) + " %"
	case strings.HasSuffix(name, "_bytes_per_s"):
		return humanBytes(v) + "/s"
	case strings.HasSuffix(name, "_mhz"):
		return Decimal(v, 0) + " MHz"
	case strings.HasSuffix(name, "_w"):
		return Decimal(v, 0) + " W"
	case strings.HasSuffix(name, "_c"):
		return Decimal(v, 0) + " °C"
	case strings.HasSuffix(name, "_mib"):
		return humanBytes(v*(1<<20)) + ""
	}
	return Decimal(v, 2)
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
	p := math.Pow10(places)
	r := math.Round(v*p) / p
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
