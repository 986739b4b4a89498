package nfssync

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/fusefs"
)

func TestCalibrate(t *testing.T) {
	a, _ := fusefs.TwoClients(t)
	local := filepath.Join(t.TempDir(), "probe")
	for _, tc := range []struct {
		name     string
		probe    string
		wantG    time.Duration
		min, max time.Duration
	}{
		{"1 s timestamps", a.Path("probe"), time.Second, time.Second, time.Second + 400*time.Millisecond},
		{"fine timestamps", local, tickGranularity, 10 * time.Millisecond, 300 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := os.WriteFile(tc.probe, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			c, err := Calibrate(context.Background(), realSys{}, tc.probe, time.Now, 5)
			if err != nil {
				t.Fatal(err)
			}
			if c.Granularity != tc.wantG || c.Window < tc.min || c.Window > tc.max || c.OffsetLow > c.OffsetHigh {
				t.Errorf("calibration %+v, want granularity %s and a window in [%s, %s]", c, tc.wantG, tc.min, tc.max)
			}
		})
	}
	if _, err := Calibrate(context.Background(), realSys{}, filepath.Join(t.TempDir(), "absent"), time.Now, 5); err == nil {
		t.Error("calibration with a missing probe file succeeded")
	}
}
