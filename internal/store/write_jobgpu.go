package store

import (
	"encoding/json"
	"fmt"

	"github.com/aicloud/gpusuite/internal/record"
)

// JobGPU stores an agent aggregate unless a later one (higher seq) of the
// same key is already stored.
func (b *Batch) JobGPU(a *record.JobGPU) error {
	node, err := b.Node(a.Cluster, a.Node)
	if err != nil {
		return err
	}
	if err := b.checkJobGPU(a, node); err != nil {
		return err
	}
	idx := a.Index
	gid, err := b.GPU(a.UUID, node, &idx, nil, a.Model)
	if err != nil {
		return err
	}
	job, err := b.Job(a.Cluster, a.Job, a.RestartCount)
	if err != nil {
		return err
	}
	if err := b.fillDims(job, a.User, a.Account, a.Partition); err != nil {
		return err
	}
	q := ""
	if len(a.Quality) > 0 {
		data, err := json.Marshal(a.Quality)
		if err != nil {
			return fmt.Errorf("aggregate %s quality: %w", a.Key, err)
		}
		q = string(data)
	}
	_, err = b.exec(`INSERT INTO job_gpus(job, gpu_id, node_id, agg_seq, agg_final, first, last, samples, sample_s, util_s,
 util_max, mem_max_mib, mem_total_mib, energy_mj, idle_s, quality) VALUES(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
ON CONFLICT(job, gpu_id) DO UPDATE SET agg_seq = excluded.agg_seq, agg_final = excluded.agg_final, first = excluded.first, last = excluded.last,
 samples = excluded.samples, sample_s = excluded.sample_s, util_s = excluded.util_s, util_max = excluded.util_max,
 mem_max_mib = excluded.mem_max_mib, mem_total_mib = excluded.mem_total_mib, energy_mj = excluded.energy_mj,
 idle_s = excluded.idle_s, quality = excluded.quality
 WHERE agg_seq IS NULL OR agg_seq < excluded.agg_seq`,
		job, gid, node, int64(a.Seq), a.Final, a.First.Unix(), a.Last.Unix(), int64(a.Samples), a.SampleSeconds, a.UtilSeconds,
		a.UtilMax, int64(a.MemMaxMiB), nullZero(a.MemTotalMiB), int64(a.EnergyMJ), a.IdleSeconds, q)
	if err != nil {
		return err
	}
	return b.NodeSeen(node, a.Last)
}

func nullZero(v uint64) any {
	if v == 0 {
		return nil
	}
	return int64(v)
}
