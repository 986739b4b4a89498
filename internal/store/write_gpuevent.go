package store

import (
	"github.com/aicloud/gpusuite/internal/record"
)

// JobEventGrace is how long after a job's end a GPU event is still the
// job's: an Xid that killed it may be reported a little after the epilog.
const JobEventGrace = 60 // seconds

// GPUEvent stores one validated GPU event of its node. A GPU that another
// node reported is Rejected (a node speaks only of its own GPUs); a GPU
// not yet known becomes the node's, as a sample's does.
func (b *Batch) GPUEvent(ev *record.GPUEvent) error {
	if err := b.ctx.Err(); err != nil {
		return err
	}
	node, err := b.Node(ev.Cluster, ev.Node)
	if err != nil {
		return err
	}
	if err := b.gpuOwner(ev.UUID, node, ev.Node); err != nil {
		return err
	}
	idx := ev.Index
	gid, err := b.GPU(ev.UUID, node, &idx, nil, "")
	if err != nil {
		return err
	}
	if _, err := b.exec(`INSERT INTO gpu_events(gpu_id, t_ns, kind, code, reason, suppressed) VALUES(?, ?, ?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		gid, ev.Time.UnixNano(), string(ev.Kind), int64(ev.Code), ev.Reason, int64(ev.Suppressed)); err != nil {
		return err
	}
	return b.NodeSeen(node, ev.Time)
}
