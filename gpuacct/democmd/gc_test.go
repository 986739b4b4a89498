package democmd

import (
	"runtime/debug"
	"testing"
)

// TestBatchGC: the demo runs with demoGCPercent unless GOGC is set, in
// which case the runtime's own reading of it stands.
func TestBatchGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	for _, tc := range []struct {
		gogc string
		want int
	}{
		{"", demoGCPercent},
		{"50", 100}, // left as the runtime set it (here: the test's 100)
	} {
		t.Run("GOGC="+tc.gogc, func(t *testing.T) {
			debug.SetGCPercent(100)
			batchGC(func(k string) string {
				if k == "GOGC" {
					return tc.gogc
				}
				return ""
			})
			if got := debug.SetGCPercent(100); got != tc.want {
				t.Errorf("GC percent %d, want %d", got, tc.want)
			}
		})
	}
}
