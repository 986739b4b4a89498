// Package notes is the logic of gpuacct note: the notes and bookings
// users leave on a node or one GPU ("booked for the NeurIPS run until Fri
// 18:00"). It checks what a user types, and lists the notes kept in the
// ledger with the requests not yet applied. The notes travel to the
// ledger's one writer through internal/requests (its note kind).
//
// Files: notes.go what a user types (target, --until); list.go the list
// of notes and requests (table, JSON); ledger.go the notes' tie to the
// ledger, the one conversion of store.Note into the board's plain values.
package notes

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/requests"
)

// ParseTarget reads NODE or NODE:GPU.
func ParseTarget(s string) (node string, gpu *int, err error) {
	node, g, hasGPU := strings.Cut(strings.TrimSpace(s), ":")
	if err := requests.CheckNode(node); err != nil {
		return "", nil, fmt.Errorf("give NODE or NODE:GPU, e.g. gpu01:3: %w", err)
	}
	if !hasGPU {
		return node, nil, nil
	}
	i, err := strconv.Atoi(g)
	if err != nil || i < 0 || i > requests.MaxGPU {
		return "", nil, fmt.Errorf("GPU %q in %q is not an index 0..%d: give NODE:GPU, e.g. %s:3", g, s, requests.MaxGPU, node)
	}
	return node, &i, nil
}

// durationRE is a count of minutes, hours, days or weeks from now.
var durationRE = regexp.MustCompile(`^(\d{1,6})(m|h|d|w)$`)

// unit is the length of a durationRE unit.
func unit(u string) time.Duration {
	switch u {
	case "m":
		return time.Minute
	case "h":
		return time.Hour
	case "d":
		return 24 * time.Hour
	}
	return 7 * 24 * time.Hour
}

// ParseUntil reads --until: a duration from now (4h, 3d, 1h30m) or a time
// as the reports read it (timespec, in loc). It must be in the future and
// at most requests.MaxAhead ahead.
func ParseUntil(spec string, now time.Time, loc *time.Location) (time.Time, error) {
	s := strings.ToLower(strings.TrimSpace(spec))
	var until time.Time
	if m := durationRE.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		if n == 0 {
			return time.Time{}, fmt.Errorf("--until %s is not in the future: give a positive duration like 4h or 3d", spec)
		}
		// Compared before multiplying: 30501 weeks overflows a Duration
		// and would wrap round to a short, accepted time.
		if u := unit(m[2]); time.Duration(n) > math.MaxInt64/u {
			return time.Time{}, fmt.Errorf("--until %q is more than %d days ahead: book at most %d days, and renew the note later", spec, requests.MaxAhead/(24*time.Hour), requests.MaxAhead/(24*time.Hour))
		} else {
			until = now.Add(time.Duration(n) * u)
		}
	} else if d, err := time.ParseDuration(s); err == nil {
		// Any Go duration reads as one (0s, 90s, -4h too), so that a
		// duration that is not ahead is told so, not taken for a time.
		if d <= 0 {
			return time.Time{}, fmt.Errorf("--until %s is not in the future: give a positive duration like 4h or 3d", spec)
		}
		until = now.Add(d)
	} else if t, err := timespec.Parse(spec, now, loc); err == nil {
		until = t
	} else {
		return time.Time{}, fmt.Errorf("--until %q is neither a duration like 4h or 3d nor a time: use %s", spec, timespec.Formats)
	}
	shown := until.In(loc).Format("2006-01-02 15:04 MST")
	switch {
	case !until.After(now):
		return time.Time{}, fmt.Errorf("--until %q (%s) is not in the future: give a later time, or a duration like 4h", spec, shown)
	case until.After(now.Add(requests.MaxAhead)):
		return time.Time{}, fmt.Errorf("--until %q (%s) is more than %d days ahead: book at most %d days, and renew the note later", spec, shown, requests.MaxAhead/(24*time.Hour), requests.MaxAhead/(24*time.Hour))
	}
	return until, nil
}
