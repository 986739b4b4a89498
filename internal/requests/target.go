package requests

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/live"
	"github.com/aicloud/gpusuite/internal/store"
)

// NoTarget is the refusal of a note on a node, or a GPU, that neither
// the ledger nor the live snapshots know: such notes would book nothing
// yet crowd the real ones out.
type NoTarget struct{ msg string }

func (e *NoTarget) Error() string { return e.msg }

// CheckTarget says why a note of cluster cannot go on node (and gpu):
// the node must be known on cluster ("": any) to the ledger (st; nil when
// it cannot be read) or have a live snapshot of cluster in liveDir, and
// gpu must be below its GPU count when that is known. A note of a
// cluster that does not have the node would be in force, yet no board
// cell would show it (a head whose cluster.name is not its agents'
// cluster booked GPUs that the board showed free). Its refusals are
// *NoTarget; other errors are failures to read the ledger.
func CheckTarget(ctx context.Context, st *store.Ledger, liveDir string, now time.Time, cluster, node string, gpu *int) error {
	count, known := 0, false
	var elsewhere []string
	if st != nil {
		n, k, err := st.NodeGPUs(ctx, cluster, node)
		if err != nil {
			return err
		}
		count, known = n, k
		if !known && cluster != "" {
			if elsewhere, err = st.NodeClusters(ctx, node); err != nil {
				return err
			}
		}
	}
	// Only the node's own file: the writer checks each note request, and
	// reading every node's snapshot for each would repeat the whole
	// directory per request. No liveDir: the ledger alone, no file
	// looked for under /.
	if liveDir != "" {
		if l, err := live.ReadNode(liveDir, node, live.MaxBytes, now); err == nil {
			if cluster == "" || l.Cluster == "" || l.Cluster == cluster {
				known = true
				for _, g := range l.GPUs {
					count = max(count, g.Index+1)
				}
			} else if !slices.Contains(elsewhere, l.Cluster) {
				elsewhere = append(elsewhere, l.Cluster)
			}
		}
	}
	switch {
	case !known && len(elsewhere) > 0:
		return &NoTarget{fmt.Sprintf("node %s is on cluster %s, not on %q, the note's (cluster.name): no board of %q shows it; set cluster.name to the agents' cluster",
			node, strings.Join(elsewhere, ", "), cluster, cluster)}
	case !known:
		return &NoTarget{fmt.Sprintf("no node %q in the ledger or the live snapshots (gpuacct status lists them)", node)}
	case gpu != nil && count > 0 && *gpu >= count:
		return &NoTarget{fmt.Sprintf("node %s has %d GPU(s), 0..%d: GPU %d is not one of them", node, count, count-1, *gpu)}
	}
	return nil
}
