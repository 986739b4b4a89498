package ignorereq

import (
	"context"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/store"
)

// NoTarget is the refusal of a note on a node, or a GPU, that neither
// the ledger nor the live snapshots know: such notes would book nothing
// yet crowd the real ones out.
type NoTarget struct{ msg string }

func (e *NoTarget) Error() string { return e.msg }

// CheckTarget says why a note cannot go on node (and gpu): the node
// must be known to the ledger (st; nil when it cannot be read) or have a
// live snapshot in liveDir, and gpu must be below its GPU count when
// that is known. Its refusals are *NoTarget; other errors are failures
// to read the ledger.
func CheckTarget(ctx context.Context, st *store.Store, liveDir string, now time.Time, node string, gpu *int) error {
	count, known := 0, false
	if st != nil {
		n, k, err := st.NodeGPUs(ctx, "", node)
		if err != nil {
			return err
		}
		count, known = n, k
	}
	// Only the node's own file: the writer checks each note request, and
	// reading every node's snapshot for each would repeat the whole
	// directory per request.
	if l, err := board.LoadNode(liveDir, node, now, board.Limits{}); err == nil {
		known = true
		for _, g := range l.GPUs {
			count = max(count, g.Index+1)
		}
	}
	switch {
	case !known:
		return &NoTarget{fmt.Sprintf("no node %q in the ledger or the live snapshots (gpuacct status lists them)", node)}
	case gpu != nil && count > 0 && *gpu >= count:
		return &NoTarget{fmt.Sprintf("node %s has %d GPU(s), 0..%d: GPU %d is not one of them", node, count, count-1, *gpu)}
	}
	return nil
}
