package report

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// BenchmarkNodeReportYear times reports by node over the ledger
// GPUSUITE_SCALE_DB (bench/scale.sh makes one) ending at
// GPUSUITE_SCALE_END (default 2027-01-01): read hour by hour from
// rollup_hourly (before, issue 35) and from the node rollups (after), in
// one run so that their ratio means something on a busy machine. The row
// caps are lifted: at 10,000 GPUs a year by month is over MaxRows, and
// what is timed is the read.
func BenchmarkNodeReportYear(b *testing.B) {
	path := os.Getenv("GPUSUITE_SCALE_DB")
	if path == "" {
		b.Skip("GPUSUITE_SCALE_DB is not set (bench/scale.sh sets it)")
	}
	end := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC)
	if e := os.Getenv("GPUSUITE_SCALE_END"); e != "" {
		var err error
		if end, err = time.Parse(time.DateOnly, e); err != nil {
			b.Fatal(err)
		}
	}
	defer SetCaps(1<<30, 1<<30)()
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		months int
		p      timespec.Period
	}{{"month", 1, timespec.None}, {"year-by-month", 12, timespec.Month}} {
		for _, zone := range []string{"UTC", "Asia/Tokyo"} {
			loc, err := time.LoadLocation(zone)
			if err != nil {
				b.Fatal(err)
			}
			e := time.Date(end.Year(), end.Month(), 1, 0, 0, 0, 0, loc)
			w := timespec.Window{Start: e.AddDate(0, -c.months, 0), End: e}
			for _, way := range []string{"before", "after"} {
				b.Run(c.name+"/"+zone+"/"+way, func(b *testing.B) {
					d, err := OpenDB(ctx, path, time.Minute)
					if err != nil {
						b.Fatal(err)
					}
					defer d.Close()
					d.nodeRollups = way == "after" && d.nodeRollups
					for b.Loop() {
						if _, err := d.Report(ctx, Request{Kind: "nodes", Window: w, Period: c.p}); err != nil {
							b.Fatal(err)
						}
					}
				})
			}
		}
	}
}
