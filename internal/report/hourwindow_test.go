package report

import (
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// TestHourWindow: windows are rounded as Slurm 22.05's sreport rounds
// them (read off it on the test cluster, docs/accounting.md).
func TestHourWindow(t *testing.T) {
	at := func(s string) time.Time {
		v, err := time.Parse("15:04:05", s)
		if err != nil {
			t.Fatal(err)
		}
		return time.Date(2026, 11, 26, v.Hour(), v.Minute(), v.Second(), 0, time.UTC)
	}
	for _, tc := range []struct{ start, end, wantStart, wantEnd string }{
		{"07:00:00", "09:29:30", "07:00:00", "10:00:00"},
		{"07:00:00", "09:29:29", "07:00:00", "09:00:00"},
		{"07:40:00", "09:00:00", "08:00:00", "09:00:00"},
		{"09:20:00", "11:40:00", "09:00:00", "12:00:00"},
		{"10:10:00", "10:20:00", "10:00:00", "11:00:00"},
		{"10:00:00", "10:00:00", "10:00:00", "11:00:00"},
		{"10:29:29", "12:30:00", "10:00:00", "13:00:00"},
		{"10:29:59", "12:29:00", "11:00:00", "12:00:00"},
	} {
		got := HourWindow(timespec.Window{Start: at(tc.start), End: at(tc.end)})
		if !got.Start.Equal(at(tc.wantStart)) || !got.End.Equal(at(tc.wantEnd)) {
			t.Errorf("start=%s end=%s: %s - %s, want %s - %s", tc.start, tc.end,
				got.Start.Format("15:04:05"), got.End.Format("15:04:05"), tc.wantStart, tc.wantEnd)
		}
	}
	// Before 1970 the rounding is the same (floor, not truncation).
	w := HourWindow(timespec.Window{Start: time.Unix(-3600-1000, 0), End: time.Unix(-3600+1000, 0)})
	if w.Start.Unix() != -3600 || w.End.Unix() != 0 {
		t.Errorf("before 1970: %d - %d, want -3600 - 0", w.Start.Unix(), w.End.Unix())
	}
}
