package store

import (
	"fmt"
	"strings"

	"github.com/aicloud/gpusuite/internal/record"
)

// ledgerModel is the model job_nodes keeps for a job's GPUs on a node. A
// MIG slice's is NVML's name for the instance, "<parent's model> MIG
// <profile>": the rollups then keep slices apart from whole GPUs by
// model (useModel), and reports weigh them by their share of the GPU
// (report.GPUEquivalent).
func ledgerModel(g record.GPU) string {
	if g.Profile == "" || g.Model == "" || strings.Contains(g.Model, " MIG ") {
		return g.Model
	}
	return g.Model + " MIG " + g.Profile
}

// nodeKind is what the rollups need of a node's GPUs (Batch.nodeKind).
type nodeKind struct {
	model string // the node's GPU model (nodeModel)
	mig   bool   // MIG instances are among them
}

// useModel is the model of the rollup rows of job's use of node: the
// node's (nodeModel), or, on a node with MIG instances, the job's slice
// model there. job_nodes.model is set once, by the job's first event on
// the node, so a later subtraction finds the rows the addition made.
// A node without MIG instances costs no query beyond nodeModel's.
func (b *Batch) useModel(job, node int64) (string, error) {
	g, err := b.nodeKind(node)
	if err != nil || !g.mig {
		return g.model, err
	}
	m := g.model
	var jm string
	row, err := b.queryRow(`SELECT coalesce((SELECT model FROM job_nodes WHERE job = ? AND node_id = ?), '')`, job, node)
	if err == nil {
		err = row.Scan(&jm)
	}
	if err != nil {
		return "", fmt.Errorf("model of job %d on node %d: %w", job, node, err)
	}
	if strings.Contains(jm, " MIG ") {
		return jm, nil
	}
	return m, nil
}
