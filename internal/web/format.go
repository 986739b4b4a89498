package web

import (
	"fmt"
	"html/template"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// The template functions: numbers as people read them. A missing value
// (no samples) is an en dash, never 0.

const missing = "–"

// thousands writes v with decimals places and thin-space-free commas.
func thousands(v float64, decimals int) string {
	s := strconv.FormatFloat(math.Abs(v), 'f', decimals, 64)
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	if v < 0 && s != strings.Repeat("0", len(s)) {
		b.WriteByte('-')
	}
	for i, c := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteByte('.')
		b.WriteString(frac)
	}
	return b.String()
}

// hoursOf formats GPU-hours with the precision their size deserves.
func hoursOf(h float64) string {
	a := math.Abs(h)
	switch {
	case a == 0:
		return "0"
	case a < 10:
		return thousands(h, 2)
	case a < 1000:
		return thousands(h, 1)
	}
	return thousands(h, 0)
}

// gpuh formats GPU-seconds (int64, float64 or *float64) as GPU-hours.
func gpuh(v any) string {
	switch x := v.(type) {
	case int64:
		return hoursOf(float64(x) / 3600)
	case float64:
		return hoursOf(x / 3600)
	case *float64:
		if x == nil {
			return missing
		}
		return hoursOf(*x / 3600)
	}
	return missing
}

// pct formats a percentage (float64 or *float64).
func pct(v any) string {
	switch x := v.(type) {
	case float64:
		return thousands(x, 1)
	case *float64:
		if x == nil {
			return missing
		}
		return thousands(*x, 1)
	}
	return missing
}

// kwh formats kilowatt-hours.
func kwh(v any) string {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case *float64:
		if x == nil {
			return missing
		}
		f = *x
	default:
		return missing
	}
	if f < 10 {
		return thousands(f, 2)
	}
	return thousands(f, 1)
}

func integer(v int64) string { return thousands(float64(v), 0) }

// dur formats seconds as "3d 4h", "5h 12m", "12m 3s" or "40s".
func dur(s int64) string {
	if s < 0 {
		s = 0
	}
	d, h, m, sec := s/86400, s%86400/3600, s%3600/60, s%60
	switch {
	case d > 0:
		return fmt.Sprintf("%dd %dh", d, h)
	case h > 0:
		return fmt.Sprintf("%dh %02dm", h, m)
	case m > 0:
		return fmt.Sprintf("%dm %02ds", m, sec)
	}
	return fmt.Sprintf("%ds", sec)
}

// ago formats an age in seconds.
func ago(s int64) string {
	if s < 60 {
		return fmt.Sprintf("%d s ago", max(s, 0))
	}
	return dur(s) + " ago"
}

// barStyle is the inline style of a share bar: fraction 0..100 of its
// cell in a palette color. The values come from numbers and the fixed
// palette, never from input.
func barStyle(pctv *float64, color string) template.CSS {
	w := 0.0
	if pctv != nil {
		w = math.Max(0, math.Min(100, *pctv))
	}
	return template.CSS(fmt.Sprintf("width:%.2f%%;background:%s", w, safeColor(color)))
}

// dotStyle colors a legend dot.
func dotStyle(color string) template.CSS {
	return template.CSS("background:" + safeColor(color))
}

// safeColor passes only #rrggbb.
func safeColor(c string) string {
	if len(c) == 7 && c[0] == '#' {
		if _, err := strconv.ParseUint(c[1:], 16, 32); err == nil {
			return c
		}
	}
	return "#888888"
}

// effClass grades an efficiency for its color: good, fair, poor.
func effClass(v *float64) string {
	switch {
	case v == nil:
		return "na"
	case *v >= 60:
		return "good"
	case *v >= 30:
		return "fair"
	}
	return "poor"
}

func teamPath(t string) string { return "/team/" + url.PathEscape(t) }
func userPath(u string) string { return "/user/" + url.PathEscape(u) }
func jobPath(prefix, cluster, id string) string {
	return prefix + "/" + url.PathEscape(cluster) + "/" + url.PathEscape(id)
}

func localTime(t int64, loc *time.Location) string {
	return time.Unix(t, 0).In(loc).Format("2006-01-02 15:04")
}
