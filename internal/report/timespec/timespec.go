// Package timespec reads the time specifications Slurm users type to
// sreport and sacct, and cuts a report window into day, week or month
// periods in a time zone.
package timespec

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Formats is the one-line list shown in errors and --help.
const Formats = "YYYY-MM-DD[THH:MM[:SS]], MM/DD[/YY], now[-N{minutes,hours,days,weeks}], today, yesterday or midnight"

var (
	isoRE   = regexp.MustCompile(`^(\d{4})-(\d{2})-(\d{2})(?:[t ](\d{2}):(\d{2})(?::(\d{2}))?)?$`)
	slashRE = regexp.MustCompile(`^(\d{1,2})/(\d{1,2})(?:/(\d{2}|\d{4}))?$`)
	nowRE   = regexp.MustCompile(`^now(?:([+-])(\d+)([a-z]*))?$`)
)

// Parse reads one time specification. now and loc are the clock and the
// zone dates are read in (--tz). Dates without a time mean 00:00; MM/DD
// without a year means this year.
func Parse(spec string, now time.Time, loc *time.Location) (time.Time, error) {
	s := strings.ToLower(strings.TrimSpace(spec))
	now = now.In(loc)
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	switch s {
	case "":
		return time.Time{}, fmt.Errorf("empty time: use %s", Formats)
	case "today", "midnight":
		return midnight, nil
	case "yesterday":
		return midnight.AddDate(0, 0, -1), nil
	}
	if m := isoRE.FindStringSubmatch(s); m != nil {
		y, mo, d := atoi(m[1]), atoi(m[2]), atoi(m[3])
		h, mi, sec := atoi(m[4]), atoi(m[5]), atoi(m[6])
		return date(spec, y, mo, d, h, mi, sec, loc)
	}
	if m := slashRE.FindStringSubmatch(s); m != nil {
		mo, d, y := atoi(m[1]), atoi(m[2]), now.Year()
		switch len(m[3]) {
		case 2:
			y = 2000 + atoi(m[3])
		case 4:
			y = atoi(m[3])
		}
		return date(spec, y, mo, d, 0, 0, 0, loc)
	}
	if m := nowRE.FindStringSubmatch(s); m != nil {
		if m[1] == "" {
			return now, nil
		}
		n, err := strconv.ParseInt(m[2], 10, 32)
		if err != nil {
			return time.Time{}, fmt.Errorf("time %q: count %q is too large", spec, m[2])
		}
		unit, ok := units[m[3]]
		if !ok {
			return time.Time{}, fmt.Errorf("time %q: unit %q is not seconds, minutes, hours, days or weeks", spec, m[3])
		}
		// n × unit overflows a Duration past about 292 years (and wraps
		// round to a date in the other direction): count whole seconds,
		// which a 32-bit n cannot overflow, and refuse what is past the
		// years a report may read.
		secs := n * int64(unit/time.Second)
		if secs > int64((MaxYear-MinYear+1)*366*24*3600) {
			return time.Time{}, fmt.Errorf("time %q is more than %d years from now: give a nearer date", spec, MaxYear-MinYear+1)
		}
		d := time.Duration(secs) * time.Second
		if m[1] == "-" {
			d = -d
		}
		return inRange(spec, now.Add(d))
	}
	return time.Time{}, fmt.Errorf("time %q is not one of %s", spec, Formats)
}

// MinYear and MaxYear bound every time a report reads: nothing was
// recorded before 1970, and a year far ahead is a typo; a window outside
// them would only cost time and memory.
const (
	MinYear = 1970
	MaxYear = 2199
)

func inRange(spec string, t time.Time) (time.Time, error) {
	if y := t.UTC().Year(); y < MinYear || y > MaxYear {
		return time.Time{}, fmt.Errorf("time %q is %s, outside the years %d to %d: give a nearer date", spec, t.UTC().Format("2006-01-02"), MinYear, MaxYear)
	}
	return t, nil
}

var units = map[string]time.Duration{
	"": time.Second, "s": time.Second, "sec": time.Second, "secs": time.Second, "second": time.Second, "seconds": time.Second,
	"m": time.Minute, "min": time.Minute, "mins": time.Minute, "minute": time.Minute, "minutes": time.Minute,
	"h": time.Hour, "hour": time.Hour, "hours": time.Hour,
	"d": 24 * time.Hour, "day": 24 * time.Hour, "days": 24 * time.Hour,
	"w": 7 * 24 * time.Hour, "week": 7 * 24 * time.Hour, "weeks": 7 * 24 * time.Hour,
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// date builds a time and refuses what time.Date would silently normalise
// (02/30 becoming March 2).
func date(spec string, y, mo, d, h, mi, s int, loc *time.Location) (time.Time, error) {
	t := time.Date(y, time.Month(mo), d, h, mi, s, 0, loc)
	if t.Year() != y || int(t.Month()) != mo || t.Day() != d || h > 23 || mi > 59 || s > 59 {
		return time.Time{}, fmt.Errorf("time %q is not a real date and time", spec)
	}
	return inRange(spec, t)
}

// Window is a report's [Start, End).
type Window struct {
	Start, End time.Time
}

// DefaultDays is the default window length: the last 7 whole days, as
// sreport reports whole days.
const DefaultDays = 7

// Resolve turns --start/--end (either may be empty) into a window: the
// default is the 7 whole days before today's midnight; a start alone runs
// to now, an end alone starts 7 days before it.
func Resolve(start, end string, now time.Time, loc *time.Location) (Window, error) {
	now = now.In(loc)
	midnight := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, loc)
	w := Window{Start: midnight.AddDate(0, 0, -DefaultDays), End: midnight}
	var err error
	if end != "" {
		if w.End, err = Parse(end, now, loc); err != nil {
			return w, fmt.Errorf("--end: %w", err)
		}
		w.Start = w.End.AddDate(0, 0, -DefaultDays)
	}
	if start != "" {
		if w.Start, err = Parse(start, now, loc); err != nil {
			return w, fmt.Errorf("--start: %w", err)
		}
		if end == "" {
			w.End = now
		}
	}
	if !w.End.After(w.Start) {
		return w, fmt.Errorf("--end %s is not after --start %s", w.End.Format("2006-01-02T15:04:05"), w.Start.Format("2006-01-02T15:04:05"))
	}
	return w, nil
}

// LoadLocation reads --tz: an IANA name ("Asia/Tokyo"), "UTC" or "Local".
func LoadLocation(name string) (*time.Location, error) {
	switch name {
	case "", "Local", "local":
		return time.Local, nil
	}
	loc, err := time.LoadLocation(name)
	if err != nil {
		return nil, fmt.Errorf("--tz %q is not a time zone name such as UTC or Europe/Berlin: %w", name, err)
	}
	return loc, nil
}

// Period is how a report window is cut into a time series.
type Period string

// The periods; None is one bucket for the whole window.
const (
	None  Period = ""
	Day   Period = "day"
	Week  Period = "week"
	Month Period = "month"
)

// ParsePeriod reads --period.
func ParsePeriod(s string) (Period, error) {
	switch p := Period(strings.ToLower(s)); p {
	case None, Day, Week, Month:
		return p, nil
	case "total", "overall", "all":
		return None, nil
	}
	return None, fmt.Errorf("--period %q is not day, week or month", s)
}

// MaxBuckets bounds a time series: about 2.7 years per day, 19 years
// per week, 83 years per month. Every bucket costs each row of a report.
const MaxBuckets = 1000

// CheckBuckets refuses a window that p would cut into more than
// MaxBuckets periods, saying how to narrow it.
func CheckBuckets(w Window, p Period) error {
	var per time.Duration
	switch p {
	case None:
		return nil
	case Day:
		per = 24 * time.Hour
	case Week:
		per = 7 * 24 * time.Hour
	case Month:
		per = 28 * 24 * time.Hour
	}
	// An upper estimate first (months of 28 days), then the exact count
	// only when it is close: Buckets itself must not be called on a
	// window of millions of days.
	if n := w.End.Sub(w.Start)/per + 2; n <= MaxBuckets {
		return nil
	} else if n > 2*MaxBuckets {
		return tooMany(w, p)
	}
	if len(Buckets(w, p)) > MaxBuckets {
		return tooMany(w, p)
	}
	return nil
}

func tooMany(w Window, p Period) error {
	return fmt.Errorf("--period %s over %s – %s is more than %d periods: shorten the window (--start/--end) or use a longer --period",
		p, w.Start.Format("2006-01-02"), w.End.Format("2006-01-02"), MaxBuckets)
}

// Bucket is one period of a report: [Start, End) clipped to the window.
type Bucket struct {
	Label      string
	Start, End time.Time
}

// Buckets cuts w into periods starting at local midnight (day), Monday
// 00:00 (week, ISO 8601) or the 1st (month) in w's zone. The first and
// last buckets are clipped to the window.
func Buckets(w Window, p Period) []Bucket {
	loc := w.Start.Location()
	if p == None {
		return []Bucket{{Label: "total", Start: w.Start, End: w.End}}
	}
	s := w.Start.In(loc)
	cur := time.Date(s.Year(), s.Month(), s.Day(), 0, 0, 0, 0, loc)
	switch p {
	case Week:
		back := (int(cur.Weekday()) + 6) % 7 // days since Monday
		cur = cur.AddDate(0, 0, -back)
	case Month:
		cur = time.Date(s.Year(), s.Month(), 1, 0, 0, 0, 0, loc)
	}
	var out []Bucket
	for cur.Before(w.End) {
		var next time.Time
		var label string
		switch p {
		case Day:
			next = cur.AddDate(0, 0, 1)
			label = cur.Format("2006-01-02")
		case Week:
			next = cur.AddDate(0, 0, 7)
			y, wk := cur.ISOWeek()
			label = fmt.Sprintf("%d-W%02d", y, wk)
		case Month:
			next = cur.AddDate(0, 1, 0)
			label = cur.Format("2006-01")
		}
		b := Bucket{Label: label, Start: cur, End: next}
		if b.Start.Before(w.Start) {
			b.Start = w.Start
		}
		if b.End.After(w.End) {
			b.End = w.End
		}
		out = append(out, b)
		cur = next
	}
	return out
}

// Find returns the index of the bucket holding Unix second t, or -1.
// Buckets must be in order and adjacent, as Buckets makes them.
func Find(bs []Bucket, t int64) int {
	lo, hi := 0, len(bs)
	for lo < hi {
		m := (lo + hi) / 2
		switch {
		case t < bs[m].Start.Unix():
			hi = m
		case t >= bs[m].End.Unix():
			lo = m + 1
		default:
			return m
		}
	}
	return -1
}

// Split cuts the interval [start, end) (Unix seconds) at the bucket
// boundaries and returns the seconds in each bucket; time outside every
// bucket is left out. A job's allocated GPU-seconds in a bucket are its
// GPUs times its seconds there, so Σ over buckets is GPUs × elapsed when
// the window holds the whole job.
func Split(start, end int64, bs []Bucket) []int64 {
	out := make([]int64, len(bs))
	if end <= start {
		return out
	}
	for i, b := range bs {
		lo, hi := max(start, b.Start.Unix()), min(end, b.End.Unix())
		if hi > lo {
			out[i] = hi - lo
		}
	}
	return out
}
