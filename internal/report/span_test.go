package report

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// TestSpansEqualDays: a report that reads a zone's months as UTC months
// less (or plus) their edge hours prints what the same report read day by
// day prints, row for row, over random windows (months of a zone, or any
// hours) and periods, in zones of whole, half and three-quarter hour
// offsets and clock changes.
func TestSpansEqualDays(t *testing.T) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 16))
	jobs, base, now := pScenario(r)
	path := buildSampledLedger(t, jobs, now)
	fast, slow := openTest(t, path), openTest(t, path)
	slow.noSpans = true
	zones := []string{"UTC", "Asia/Tokyo", "America/St_Johns", "Australia/Adelaide", "Asia/Kolkata", "Pacific/Chatham", "America/Los_Angeles"}
	periods := []timespec.Period{timespec.None, timespec.Month, timespec.Week, timespec.Day}
	spans := 0
	for i := range 28 {
		zone := zones[i%len(zones)]
		loc, err := time.LoadLocation(zone)
		if err != nil {
			t.Fatal(err)
		}
		var w timespec.Window
		if i%2 == 0 {
			// Whole months of the zone around the jobs' March.
			w = timespec.Window{Start: time.Date(2026, time.Month(2+r.IntN(2)), 1, 0, 0, 0, 0, loc), End: time.Date(2026, time.Month(4+r.IntN(2)), 1, 0, 0, 0, 0, loc)}
		} else {
			lo := base - 2*86400 + r.Int64N(10*86400)
			hi := now + 2*86400 - r.Int64N(10*86400)
			w = HourWindow(timespec.Window{Start: time.Unix(lo, 0).In(loc), End: time.Unix(hi, 0).In(loc)})
		}
		p := periods[r.IntN(len(periods))]
		for _, pc := range plan(timespec.Buckets(w, p), false, true, true) {
			if pc.at != 0 {
				spans++
			}
		}
		for _, kind := range []string{"teams", "users", "accounts", "partitions", "models", "tree"} {
			name := fmt.Sprintf("%s %s – %s %s %s", zone, w.Start.Format(time.DateTime), w.End.Format(time.DateTime), periodName(p), kind)
			req := Request{Kind: kind, Window: w, Period: p}
			want, err := slow.Report(ctx, req)
			if err != nil {
				t.Fatalf("%s, day by day: %v", name, err)
			}
			got, err := fast.Report(ctx, req)
			if err != nil {
				t.Fatalf("%s, with spans: %v", name, err)
			}
			if d := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-6)); d != "" {
				t.Errorf("%s: with spans (-day by day +spans):\n%s", name, d)
			}
		}
	}
	if spans < 10 {
		t.Errorf("only %d span pieces over the windows: the test does not exercise spans", spans)
	}
}
