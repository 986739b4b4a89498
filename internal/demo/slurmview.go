package demo

import (
	"context"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// The synthetic Slurm's words. The drain reason and the reservation's
// name say that they are simulated, so that nobody reading the board
// takes them for a real cluster's.
const (
	drainReason     = "simulated: NVLink errors on one GPU, drained until the board is replaced"
	reservationName = "simulated-nlp-deadline"
	longPartition   = "long"
	gpuPartition    = "gpu"
	cpusPerNode     = 64
)

// Slurm is Slurm's view of the live cluster as scontrol would give it,
// made up from the jobs running (no scontrol runs in the demo): every
// node in partition gpu, the first half in long too; each node idle,
// mixed or allocated by its GPUs held; the drained node draining while
// its jobs run; and, with four nodes or more, one node reserved for the
// nlp team. It is the board Source's Slurm reader; with
// LiveOptions.SlurmFile set, each view also goes to that file (a failed
// write is logged: the board has its view all the same).
func (l *Live) Slurm(ctx context.Context) (slurmstate.State, error) {
	st := l.view()
	if l.sf != nil {
		if err := l.sf.keep(st); err != nil {
			l.o.Log.Warn("cannot write the simulated Slurm's view for gpuacct free --slurm-file", "err", err)
		}
	}
	return st, ctx.Err()
}

// view is the simulated Slurm's view now.
func (l *Live) view() slurmstate.State {
	now := l.o.Now()
	st := slurmstate.State{At: now}
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, n := range l.nodes {
		used := 0
		for _, j := range n.holder {
			if j != nil {
				used++
			}
		}
		sn := slurmstate.Node{Name: n.name, Base: "MIXED", Condition: slurmstate.Mixed, Partitions: []string{gpuPartition},
			CPUs: cpusPerNode, CPUsAlloc: used * cpusPerNode / l.lay.gpus, GPUCount: l.lay.gpus, GPUsUsed: used,
			GPUs: []slurmstate.GPU{{Type: strings.ToLower(l.o.Info.Model), Count: l.lay.gpus, Used: used}}}
		switch used {
		case 0:
			sn.Base, sn.Condition = "IDLE", slurmstate.Idle
		case l.lay.gpus:
			sn.Base, sn.Condition = "ALLOCATED", slurmstate.Allocated
		}
		sn.State = sn.Base
		if i < (len(l.nodes)+1)/2 {
			sn.Partitions = append(sn.Partitions, longPartition)
		}
		if i == l.lay.drainedNode {
			sn.State, sn.Flags = sn.Base+"+DRAIN", []string{"DRAIN"}
			sn.Condition = slurmstate.Drained
			if used > 0 {
				sn.Condition = slurmstate.Draining
			}
			sn.Reason, sn.ReasonUser, sn.ReasonTime = drainReason, "root", l.began.Add(-2*time.Hour).Truncate(time.Second)
		}
		st.Nodes = append(st.Nodes, sn)
	}
	if r := l.lay.reservedNode; r >= 0 {
		name := l.nodes[r].name
		st.Reservations = append(st.Reservations, slurmstate.Reservation{Name: reservationName,
			Start: l.began.Add(-time.Hour).Truncate(time.Hour), End: l.began.Add(7 * 24 * time.Hour).Truncate(time.Hour),
			NodeList: name, Nodes: []string{name}, Partition: gpuPartition, Accounts: []string{reservationTeam},
			Flags: []string{"SPEC_NODES"}, State: "ACTIVE"})
	}
	return st
}
