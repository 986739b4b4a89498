package demo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/ingest"
)

// sacctTimeLayout is how sacctmgr prints and reads times (the demo's
// slurmdbd speaks UTC: ingest.Deps.SacctLocation).
const sacctTimeLayout = "2006-01-02T15:04:05"

// demoSacctmgr is the demo's slurmdbd as ingest asks it through
// sacctmgr: the cluster registered since `since` with nodes × gpus GPUs,
// no account tree, no reservation. Without it `report cluster` and the
// dashboard's capacity line would have nothing to show: the demo runs no
// Slurm, as its board's Slurm view is synthetic too. The cluster's row
// is listed only for a window it overlaps, as sacctmgr does, so that
// ingest's month-by-month backfill stores it once.
func demoSacctmgr(cluster string, nodes, gpus int, since time.Time) ingest.Sacct {
	return func(ctx context.Context, args ...string) ([]byte, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		what, end := "", time.Time{}
		for i, a := range args {
			if a == "show" && i+1 < len(args) {
				what = args[i+1]
			}
			if v, ok := strings.CutPrefix(a, "End="); ok {
				t, err := time.ParseInLocation(sacctTimeLayout, v, time.UTC)
				if err != nil {
					return nil, fmt.Errorf("demo sacctmgr: End=%q: %w", v, err)
				}
				end = t
			}
		}
		if what != "event" || (!end.IsZero() && !since.Before(end)) {
			return nil, nil
		}
		line := fmt.Sprintf("%s||%s|Unknown|0|cpu=%d,mem=%dG,node=%d,billing=%d,gres/gpu=%d|Cluster Registered TRES\n",
			cluster, since.UTC().Format(sacctTimeLayout), nodes*cpusPerNode, nodes*512, nodes, nodes*cpusPerNode, nodes*gpus)
		return []byte(line), nil
	}
}
