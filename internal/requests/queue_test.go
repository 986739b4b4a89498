package requests

import (
	"testing"
	"time"
)

// TestRequestMade: the writer dates each kind of request by the time it
// was made, unless that time is missing or ahead of the writer's clock.
func TestRequestMade(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		time time.Time
		want time.Time
	}{
		{"made before", now.Add(-time.Hour), now.Add(-time.Hour)},
		{"made now", now, now},
		{"no time", time.Time{}, now},
		{"a clock ahead", now.Add(time.Minute), now},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Request{Time: tc.time}
			if got := r.made(now); !got.Equal(tc.want) {
				t.Errorf("made(%v) of a request of %v = %v, want %v", now, tc.time, got, tc.want)
			}
		})
	}
}
