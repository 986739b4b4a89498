package demo

// role is what one GPU of the live demo does, chosen so that every state
// of the board is on it at every moment.
type role int

const (
	// pool GPUs run the rolling jobs: started and ended every 20–40 s.
	pool role = iota
	// held is allocated to a job whose process runs on the stray GPU
	// instead (the wrong device picked by hand): allocated but idle.
	held
	// stray runs that job's process outside its allocation: foreign.
	stray
	// booked is kept free and a note in the ledger books it.
	booked
	// draining runs a long job on the drained node (Slurm drains a node
	// after its running jobs).
	draining
	// drained is unheld on the drained node.
	drained
)

// layout places the roles on the demo's nodes: the first node holds the
// held, stray and booked GPUs beside a pool GPU; the last node is drained
// with jobs still on half its GPUs; with four nodes or more the one
// before it is reserved for a team; the rest are pool. Small clusters
// get the roles that fit.
type layout struct {
	nodes, gpus int
	roles       [][]role
	// drainedNode and reservedNode are node indexes, -1 for none.
	drainedNode, reservedNode int
}

func newLayout(nodes, gpus int) layout {
	l := layout{nodes: nodes, gpus: gpus, roles: make([][]role, nodes), drainedNode: -1, reservedNode: -1}
	if nodes >= 2 {
		l.drainedNode = nodes - 1
	}
	if nodes >= 4 {
		l.reservedNode = nodes - 2
	}
	first := []role{pool, held, stray, booked}
	for n := range l.roles {
		l.roles[n] = make([]role, gpus)
		for g := range l.roles[n] {
			switch {
			case n == l.drainedNode && g < gpus/2:
				l.roles[n][g] = draining
			case n == l.drainedNode:
				l.roles[n][g] = drained
			case n == 0 && g < len(first):
				l.roles[n][g] = first[g]
			default:
				l.roles[n][g] = pool
			}
		}
	}
	return l
}

// find returns the node and GPU of the first GPU in role r.
func (l layout) find(r role) (node, gpu int, ok bool) {
	for n, gs := range l.roles {
		for g, x := range gs {
			if x == r {
				return n, g, true
			}
		}
	}
	return 0, 0, false
}

// keepFree is how many pool GPUs of node the rolling jobs leave free, so
// that a free (or, on the reserved node, reserved) GPU is always shown:
// one on a node with two pool GPUs or more.
func (l layout) keepFree(node int) int {
	n := 0
	for _, r := range l.roles[node] {
		if r == pool {
			n++
		}
	}
	if n >= 2 {
		return 1
	}
	return 0
}
