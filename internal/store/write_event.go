package store

import (
	"fmt"
	"strings"

	"github.com/aicloud/gpusuite/internal/record"
)

// Event stores one validated job start or end. A start is kept as first
// seen; an epilog end replaces only an estimated end, not Slurm's.
func (b *Batch) Event(ev *record.Event) error {
	node, err := b.Node(ev.Cluster, ev.Node)
	if err != nil {
		return err
	}
	if err := b.checkEvent(ev, node); err != nil {
		return err
	}
	if err := b.NodeSeen(node, ev.Time); err != nil {
		return err
	}
	job, err := b.Job(ev.Cluster, ev.Job.ID, ev.Job.RestartCount)
	if err != nil {
		return err
	}
	old, err := b.jobDims(job)
	if err != nil {
		return err
	}
	j := ev.Job
	if _, err := b.exec(`UPDATE jobs SET
 user = CASE WHEN user = '' THEN ? ELSE user END,
 uid = coalesce(uid, ?), gid = coalesce(gid, ?),
 account = CASE WHEN account = '' THEN ? ELSE account END,
 team = CASE WHEN team = '' THEN ? ELSE team END,
 partition = CASE WHEN partition = '' THEN ? ELSE partition END,
 array_job_id = coalesce(array_job_id, ?), array_task_id = coalesce(array_task_id, ?)
 WHERE id = ?`,
		j.User, i64p(j.UID), i64p(j.GID), j.Account, j.Account, j.Partition, nz(j.ArrayJobID), i64p(j.ArrayTaskID), job); err != nil {
		return err
	}
	nd := old
	if nd.User == "" {
		nd.User = j.User
	}
	if nd.Account == "" {
		nd.Account = j.Account
	}
	if nd.Partition == "" {
		nd.Partition = j.Partition
	}
	if err := b.moveJob(job, old, nd); err != nil {
		return err
	}
	model := ""
	for _, g := range ev.GPUs {
		if g.Model != "" {
			model = ledgerModel(g)
			break
		}
	}
	quality := strings.Join(ev.Quality, "; ")
	t := ev.Time.Unix()
	switch ev.Kind {
	case record.JobStart:
		// A start estimated from the end or the samples gives way to the
		// prolog's.
		if _, err := b.exec(`INSERT INTO job_nodes(job, node_id, gpus, model, start, start_source, quality) VALUES(?, ?, ?, ?, ?, 'prolog', ?)
ON CONFLICT(job, node_id) DO UPDATE SET start = CASE WHEN start IS NULL OR start_estimated = 1 THEN excluded.start ELSE start END,
 gpus = CASE WHEN start IS NULL OR start_estimated = 1 THEN excluded.gpus ELSE gpus END,
 start_source = CASE WHEN start IS NULL OR start_estimated = 1 THEN 'prolog' ELSE start_source END, start_estimated = 0,
 model = CASE WHEN model = '' THEN excluded.model ELSE model END,
 quality = CASE WHEN quality = '' THEN excluded.quality WHEN excluded.quality = '' THEN quality ELSE quality || '; ' || excluded.quality END`,
			job, node, len(j.GPUs), model, t, quality); err != nil {
			return err
		}
	case record.JobEnd:
		var code, sig any
		if j.Exit != nil {
			code, sig = j.Exit.Code, j.Exit.Signal
		}
		// An end without a start: the end stands in for the start
		// (start_estimated) until Slurm or the first sample says better.
		// The epilog's end replaces only an estimated one: Slurm's (sacct)
		// stays, and keeps its exit code where it gave one.
		if _, err := b.exec(`INSERT INTO job_nodes(job, node_id, gpus, model, start, start_estimated, start_source, end, end_source, exit_code, exit_signal, quality)
 VALUES(?, ?, ?, ?, ?, 1, 'end', ?, 'epilog', ?, ?, ?)
ON CONFLICT(job, node_id) DO UPDATE SET
 end = CASE WHEN end IS NULL OR end_estimated = 1 THEN excluded.end ELSE end END,
 exit_code = CASE WHEN end IS NULL OR end_estimated = 1 THEN excluded.exit_code WHEN end_source = 'sacct' THEN coalesce(exit_code, excluded.exit_code) ELSE exit_code END,
 exit_signal = CASE WHEN end IS NULL OR end_estimated = 1 THEN excluded.exit_signal WHEN end_source = 'sacct' THEN coalesce(exit_signal, excluded.exit_signal) ELSE exit_signal END,
 end_source = CASE WHEN end IS NULL OR end_estimated = 1 THEN 'epilog' ELSE end_source END, end_estimated = 0,
 gpus = CASE WHEN gpus = 0 THEN excluded.gpus ELSE gpus END,
 model = CASE WHEN model = '' THEN excluded.model ELSE model END,
 quality = CASE WHEN quality = '' THEN excluded.quality WHEN excluded.quality = '' THEN quality ELSE quality || '; ' || excluded.quality END`,
			job, node, len(j.GPUs), model, t, t, code, sig, quality); err != nil {
			return err
		}
	default:
		return fmt.Errorf("event %s: kind %q", ev.Key, ev.Kind)
	}
	// A node whose times are not Slurm's joins a run already reconciled
	// (a multi-node job's files that came late): the run is asked again,
	// so that this node too takes Slurm's times (write_reconcile.go). A run the
	// batch knows unreconciled needs no asking.
	if !b.unchecked[job] {
		if _, err := b.exec(`UPDATE jobs SET sacct_checked = 0 WHERE id = ? AND sacct_checked <> 0 AND EXISTS (
 SELECT 1 FROM job_nodes WHERE job = ? AND node_id = ? AND (coalesce(start_source, '') <> 'sacct' OR coalesce(end_source, '') <> 'sacct'))`, job, job, node); err != nil {
			return err
		}
	}
	for _, g := range ev.GPUs {
		if g.UUID == "" {
			continue
		}
		gid, err := b.GPU(g.UUID, node, g.Index, &g.Minor, g.Model)
		if err != nil {
			return err
		}
		col := "energy_start_mj"
		if ev.Kind == record.JobEnd {
			col = "energy_end_mj"
		}
		var e any
		if g.EnergyMJ != nil {
			e = int64(*g.EnergyMJ)
		}
		if _, err := b.exec(`INSERT INTO job_gpus(job, gpu_id, node_id, minor, `+col+`) VALUES(?, ?, ?, ?, ?)
ON CONFLICT(job, gpu_id) DO UPDATE SET minor = excluded.minor, `+col+` = coalesce(`+col+`, excluded.`+col+`)`, job, gid, node, g.Minor, e); err != nil {
			return err
		}
	}
	b.rerolls[job] = true
	b.summaries[job] = true
	clear(b.allocs)
	return nil
}

func i64p(p *int64) any {
	if p == nil {
		return nil
	}
	return *p
}

func nz(v uint64) any {
	if v == 0 {
		return nil
	}
	return int64(v)
}
