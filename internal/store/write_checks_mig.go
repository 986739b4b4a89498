package store

import (
	"database/sql"
	"errors"
	"fmt"

	"github.com/aicloud/gpusuite/internal/record"
)

// CheckMIGParents refuses a segment naming a MIG instance that is not on
// one of its node's GPUs (invariant 8): each instance's parent must be a
// GPU the segment samples itself (checkSegment then holds that GPU to its
// node) or one the ledger already knows as this node's. An instance's own
// UUID is held to its node by checkSegment. A parent no node reported
// yet is a Rejected with Wait. It writes nothing but the node's row.
func (b *Batch) CheckMIGParents(h *record.SegmentHeader, samples []record.Sample) error {
	sampled := map[string]bool{}
	parents := map[string]string{} // parent -> an instance naming it
	var order []string
	for i := range samples {
		s := &samples[i]
		p := s.Parent()
		if p == "" {
			sampled[s.UUID] = true
			continue
		}
		if _, ok := parents[p]; !ok {
			parents[p] = s.UUID
			order = append(order, p)
		}
	}
	if len(order) == 0 {
		return nil
	}
	node, err := b.Node(h.Cluster, h.Node)
	if err != nil {
		return err
	}
	for _, p := range order {
		if sampled[p] {
			continue
		}
		// gpuOwner answers for a GPU the batch or the ledger knows; one it
		// does not know, it lets pass: that is read here first, once
		if _, known := b.gpus[p]; !known {
			row, err := b.queryRow(`SELECT node_id FROM gpus WHERE uuid = ?`, p)
			if err != nil {
				return err
			}
			var owner int64
			switch err := row.Scan(&owner); {
			case errors.Is(err, sql.ErrNoRows):
				// a profile segment holds the instance alone, and may come
				// before the node's first segment with the parent: wait
				return &Rejected{Wait: true, Reason: fmt.Sprintf("MIG instance %s is on GPU %s, which node %s has not reported: a node may speak only of its own GPUs",
					parents[p], p, h.Node)}
			case err != nil:
				return fmt.Errorf("parent of MIG instance %s: %w", parents[p], err)
			}
			if owner == node {
				continue
			}
		}
		if err := b.gpuOwner(p, node, h.Node); err != nil {
			return err
		}
	}
	return nil
}
