package nfssync

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// Calibration is what a probe file's timestamps tell about the server.
type Calibration struct {
	// Granularity of the server's timestamps: 1 s, or tickGranularity
	// when they carry sub-second parts (a kernel clock tick).
	Granularity time.Duration
	// OffsetLow and OffsetHigh bound server clock − this clock.
	OffsetLow, OffsetHigh time.Duration
	// Window is the wait after a file's mtime that makes sure the
	// server's clock is in a later granule, with a margin.
	Window time.Duration
}

// calibrationMargin is added to the measured window.
const calibrationMargin = 50 * time.Millisecond

// tickGranularity bounds the kernel clock tick that fine timestamps are
// taken from (the coarse clock: 1 to 10 ms).
const tickGranularity = 10 * time.Millisecond

// Calibrate touches probe (an existing regular file, never created) a few
// times at different phases of the second and reads back the server's
// timestamps.
func Calibrate(ctx context.Context, sys Sys, probe string, now func() time.Time, samples int) (Calibration, error) {
	fd, err := unix.Open(probe, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return Calibration{}, fmt.Errorf("open probe file %q: %w (create it once, writable by root, on the share)", probe, err)
	}
	defer unix.Close(fd)
	var c Calibration
	if samples < 2 {
		samples = 2
	}
	type sample struct{ l0, l1, s time.Time }
	var ss []sample
	whole := true
	for i := 0; i < samples; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return c, ctx.Err()
			case <-time.After(time.Second/time.Duration(samples) + 17*time.Millisecond):
			}
		}
		l0 := now()
		if err := sys.Touch(fd); err != nil {
			return c, fmt.Errorf("touch probe file %q: %w", probe, err)
		}
		l1 := now()
		st, err := sys.Stat(fd, true)
		if err != nil {
			return c, fmt.Errorf("stat probe file %q: %w", probe, err)
		}
		if !st.IsRegular() {
			return c, fmt.Errorf("probe file %q is not a regular file", probe)
		}
		if st.Mtime.Nanosecond() != 0 {
			whole = false
		}
		ss = append(ss, sample{l0, l1, st.Mtime})
	}
	c.Granularity = tickGranularity
	if whole {
		c.Granularity = time.Second
	}
	// The server's clock read s..s+G at some local time in l0..l1.
	for i, x := range ss {
		lo, hi := x.s.Sub(x.l1), x.s.Add(c.Granularity).Sub(x.l0)
		if i == 0 || lo > c.OffsetLow {
			c.OffsetLow = lo
		}
		if i == 0 || hi < c.OffsetHigh {
			c.OffsetHigh = hi
		}
	}
	// Touch once local ≥ mtime + G − offset_low, so server ≥ mtime + G.
	c.Window = c.Granularity - c.OffsetLow + calibrationMargin
	c.Window = max(c.Window, 10*time.Millisecond)
	return c, nil
}
