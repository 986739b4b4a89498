package table

import (
	"math"
	"strings"
)

// Unit is what a figure measures and so how precisely it is written.
// Every export, report, JSON answer and --human rounds through here, so
// that a unit has one precision everywhere and no float noise
// (16736.910000000003) reaches a reader (docs/reports.md, "Precision").
type Unit int

// The units. Places are decimals in the machine formats (CSV, TSV, -P,
// JSON); HumanPlaces in text for people, which may be coarser.
const (
	// NoUnit is a count or a metric whose unit the name does not say.
	NoUnit Unit = iota
	// Seconds of sampled, used or idle time: 0.1 s, the finest a
	// sample's interval is written to.
	UnitSeconds
	// UnitGPUSeconds are sreport's -t seconds: whole GPU-seconds.
	UnitGPUSeconds
	UnitGPUMinutes
	UnitGPUHours
	// UnitPercent is a percentage 0..100 (utilization, efficiency).
	UnitPercent
	// UnitShare is GPU-time as a percentage of the cluster's (-t
	// percent): finer, as a row's part of a large cluster is small.
	UnitShare
	UnitWatts
	// UnitMillijoules is energy as the ledger keeps it (NVML's counter).
	UnitMillijoules
	UnitKWh
	UnitMiB
	UnitMHz
	UnitCelsius
	UnitBytesPerSecond
)

// places are each unit's decimals: machine, human.
var places = [...][2]int{
	NoUnit:             {3, 2},
	UnitSeconds:        {1, 1},
	UnitGPUSeconds:     {0, 0},
	UnitGPUMinutes:     {4, 1},
	UnitGPUHours:       {6, 2},
	UnitPercent:        {2, 1},
	UnitShare:          {4, 1},
	UnitWatts:          {1, 1},
	UnitMillijoules:    {0, 0},
	UnitKWh:            {6, 3},
	UnitMiB:            {1, 1},
	UnitMHz:            {0, 0},
	UnitCelsius:        {0, 0},
	UnitBytesPerSecond: {0, 1},
}

// Places is how many decimals u is written with in the machine formats.
func (u Unit) Places() int { return places[u][0] }

// HumanPlaces is how many decimals u is written with for people.
func (u Unit) HumanPlaces() int { return places[u][1] }

// Round is v to u's machine precision.
func (u Unit) Round(v float64) float64 { return Round(v, u.Places()) }

// Round is v rounded to places decimals; strconv's shortest form then
// writes it without noise (756.5999999999998 → 756.6). Magnitudes past
// float64's exact integers are left as they are.
func Round(v float64, places int) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) >= 1e15 {
		return v
	}
	p := math.Pow10(places)
	r := math.Round(v*p) / p
	if r == 0 {
		return 0 // no -0
	}
	return r
}

// UnitOf is the unit of a column, key or metric by its name, whose unit
// comes last (record.Catalogue's names, the exports' columns).
func UnitOf(name string) Unit {
	switch name {
	case "seconds":
		return UnitSeconds
	case "util_max":
		return UnitPercent
	}
	for _, s := range unitSuffixes {
		if strings.HasSuffix(name, s.suffix) {
			return s.unit
		}
	}
	return NoUnit
}

// unitSuffixes are the names' last parts and their units, the longer of
// two that end alike first (_gpu_seconds before _s).
var unitSuffixes = []struct {
	suffix string
	unit   Unit
}{
	{"_bytes_per_s", UnitBytesPerSecond}, {"_gpu_seconds", UnitGPUSeconds}, {"_s", UnitSeconds}, {"_seconds", UnitSeconds},
	{"_minutes", UnitGPUMinutes}, {"_hours", UnitGPUHours}, {"_gpu_pct", UnitShare}, {"_pct", UnitPercent}, {"_w", UnitWatts},
	{"_mj", UnitMillijoules}, {"_kwh", UnitKWh}, {"_mib", UnitMiB}, {"_mhz", UnitMHz}, {"_c", UnitCelsius},
}
