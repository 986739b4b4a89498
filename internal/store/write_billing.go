package store

import (
	"database/sql"
	"fmt"
	"maps"
	"sort"
	"strings"

	"github.com/aicloud/gpusuite/internal/slurm"
)

// Billing sources: Slurm's partitions, or the config's per-model weights
// of a site without them (one row, partition "", weights keyed
// "gres/gpu:MODEL").
const (
	BillingSlurm  = "slurm"
	BillingConfig = "config"
)

// BillingWeights is one partition's weights as read at a time.
type BillingWeights struct {
	Partition string
	Weights   string // TRESBillingWeights' text; "" none
	MaxTRES   bool
}

// weightsRow is a billing_weights row in force from since.
type weightsRow struct {
	since   int64
	w       slurm.Weights
	maxTRES bool
}

// billingHistory is the ledger's billing_weights, read once a batch:
// per cluster, partition and source, the rows oldest first.
type billingHistory map[[3]string][]weightsRow

// SetBillingWeights records the weights of cluster's partitions from
// source as read at at: a row where a partition's differ from the ones
// in force (a weight changed mid-period bills each job at the weight of
// its start). Partitions read no longer are left as they were.
func (b *Batch) SetBillingWeights(cluster, source string, at int64, parts []BillingWeights) error {
	h, err := b.billingWeights()
	if err != nil {
		return err
	}
	for _, p := range parts {
		w, err := slurm.ParseWeights(p.Weights)
		if err != nil {
			return fmt.Errorf("billing weights of partition %q: %w", p.Partition, err)
		}
		k := [3]string{cluster, p.Partition, source}
		if rows := h[k]; len(rows) > 0 {
			last := rows[len(rows)-1]
			if last.maxTRES == p.MaxTRES && maps.Equal(last.w, w) {
				continue
			}
			if at <= last.since {
				return fmt.Errorf("billing weights of partition %q at %d: not after the last change at %d", p.Partition, at, last.since)
			}
		}
		if _, err := b.exec(`INSERT INTO billing_weights (cluster, partition, source, since, weights, max_tres) VALUES (?, ?, ?, ?, ?, ?)`,
			cluster, p.Partition, source, at, p.Weights, p.MaxTRES); err != nil {
			return fmt.Errorf("billing weights of partition %q: %w", p.Partition, err)
		}
		h[k] = append(h[k], weightsRow{since: at, w: w, maxTRES: p.MaxTRES})
	}
	return nil
}

// billingWeights reads the weights' history once a batch (a few rows a
// partition: one a change).
func (b *Batch) billingWeights() (billingHistory, error) {
	if b.billing != nil {
		return b.billing, nil
	}
	rows, err := b.query(`SELECT cluster, partition, source, since, weights, max_tres FROM billing_weights ORDER BY since LIMIT ?`, maxWeightRows)
	h := billingHistory{}
	err = eachRow(rows, err, func(r batchRows) error {
		var k [3]string
		var row weightsRow
		var text string
		if err := r.Scan(&k[0], &k[1], &k[2], &row.since, &text, &row.maxTRES); err != nil {
			return err
		}
		w, err := slurm.ParseWeights(text)
		if err != nil {
			return fmt.Errorf("billing weights of partition %q: %w", k[1], err)
		}
		row.w = w
		h[k] = append(h[k], row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("billing weights: %w", err)
	}
	b.billing = h
	return h, nil
}

// maxWeightRows bounds the weights' history read: a change a day on 100
// partitions for years is well within it.
const maxWeightRows = 1 << 20

// at is the row of rows in force at t: the last one since before it, or
// the first where t precedes them all (jobs older than the first read).
func at(rows []weightsRow, t int64) (weightsRow, bool) {
	if len(rows) == 0 {
		return weightsRow{}, false
	}
	i := sort.Search(len(rows), func(i int) bool { return rows[i].since > t })
	return rows[max(i-1, 0)], true
}

// slurmAt is the Slurm weights of the job's partition in force at
// start; false where it had none (Slurm's own billing of a job counts
// only where it had some).
func (h billingHistory) slurmAt(d Dims, start int64) (weightsRow, bool) {
	r, ok := at(h[[3]string{d.Cluster, d.Partition, BillingSlurm}], start)
	return r, ok && len(r.w) > 0
}

// estimateRate is the billing units a second of a job's part on a node
// until Slurm's billing of it is known (SetSlurmBilling): its GPUs under
// the partition's weights in force at its start (the typed weight of the
// node's model where there is one), or else under the config's weight of
// the model; 0 without either.
func (b *Batch) estimateRate(job, node, start, gpus int64) (float64, error) {
	h, err := b.billingWeights()
	if err != nil || len(h) == 0 {
		return 0, err
	}
	d, err := b.jobDims(job)
	if err != nil {
		return 0, err
	}
	model, err := b.nodeModel(node)
	if err != nil {
		return 0, err
	}
	g := float64(gpus)
	if r, ok := h.slurmAt(d, start); ok {
		tres := map[string]float64{"gres/gpu": g}
		if t := r.w.GPUType(model); t != "" {
			tres["gres/gpu:"+t] = g
		}
		return slurm.Billing(r.w, r.maxTRES, tres), nil
	}
	if r, ok := at(h[[3]string{d.Cluster, "", BillingConfig}], start); ok {
		return g * r.w["gres/gpu:"+strings.ToLower(model)], nil
	}
	return 0, nil
}

// SetSlurmBilling takes Slurm's billing of job run row (sacct's AllocTRES
// billing=N, units a second of the whole run) as its rate, shared among
// its nodes by GPUs, where its partition had Slurm weights at its start
// (without them Slurm bills CPUs, which is no GPU billing: the estimate
// stands). The run's rollups are moved at the end of the batch.
func (b *Batch) SetSlurmBilling(row int64, billing float64) error {
	h, err := b.billingWeights()
	if err != nil {
		return err
	}
	d, err := b.jobDims(row)
	if err != nil {
		return err
	}
	rows, err := b.query(`SELECT node_id, gpus, start FROM job_nodes WHERE job = ? ORDER BY node_id`, row)
	type part struct{ node, gpus, start int64 }
	parts, err := collect(rows, err, func(r batchRows, p *part) error {
		var s sql.NullInt64
		err := r.Scan(&p.node, &p.gpus, &s)
		p.start = s.Int64
		if !s.Valid {
			p.start = -1
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("nodes of job row %d: %w", row, err)
	}
	var gpus int64
	start := int64(-1)
	for _, p := range parts {
		gpus += p.gpus
		if p.start >= 0 && (start < 0 || p.start < start) {
			start = p.start
		}
	}
	if start < 0 || gpus <= 0 {
		return nil
	}
	if _, ok := h.slurmAt(d, start); !ok {
		return nil
	}
	for _, p := range parts {
		if _, err := b.exec(`UPDATE job_nodes SET bill_rate = ? WHERE job = ? AND node_id = ?`, billing*float64(p.gpus)/float64(gpus), row, p.node); err != nil {
			return fmt.Errorf("billing of job row %d: %w", row, err)
		}
	}
	b.rerolls[row] = true
	return nil
}
