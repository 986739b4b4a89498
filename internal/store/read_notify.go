package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// MaxNotifyList bounds one NotifyMessages read.
const MaxNotifyList = 10_000

// NotifyQuery selects messages; empty fields select all.
type NotifyQuery struct {
	Cluster string
	Job     *int64 // Slurm job id
	User    string
	// Limit bounds the rows, newest first; 0 or more than MaxNotifyList
	// reads MaxNotifyList.
	Limit int
}

// NotifyMessages lists the messages q selects, newest first.
func (s *Ledger) NotifyMessages(ctx context.Context, q NotifyQuery) ([]NotifyMessage, error) {
	var b strings.Builder
	var args []any
	b.WriteString(`SELECT ` + notifyColumns + ` FROM notify_messages WHERE 1 = 1`)
	if q.Cluster != "" {
		b.WriteString(` AND cluster = ?`)
		args = append(args, q.Cluster)
	}
	if q.Job != nil {
		b.WriteString(` AND job = ?`)
		args = append(args, *q.Job)
	}
	if q.User != "" {
		b.WriteString(` AND user = ?`)
		args = append(args, q.User)
	}
	limit := q.Limit
	if limit <= 0 || limit > MaxNotifyList {
		limit = MaxNotifyList
	}
	b.WriteString(` ORDER BY created DESC, id DESC LIMIT ?`)
	args = append(args, limit)
	rows, err := s.db.QueryContext(ctx, b.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("read messages: %w", translate(err))
	}
	defer rows.Close()
	var out []NotifyMessage
	for rows.Next() {
		m, err := scanNotify(rows)
		if err != nil {
			return nil, fmt.Errorf("read messages: %w", translate(err))
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read messages: %w", translate(err))
	}
	return out, nil
}

// NotifyQueue counts messages by state, and the oldest due time of the
// queued ones (nil when none is queued): what check and /metrics show.
type NotifyQueue struct {
	Queued, Sent, Failed int64
	OldestDue            *time.Time
}

// NotifyQueueState reads the counts of NotifyQueue.
func (s *Ledger) NotifyQueueState(ctx context.Context) (NotifyQueue, error) {
	var q NotifyQueue
	var oldest sql.NullInt64
	err := s.db.QueryRowContext(ctx, `SELECT coalesce(sum(CASE WHEN state = 'queued' THEN 1 ELSE 0 END), 0),
 coalesce(sum(CASE WHEN state = 'sent' THEN 1 ELSE 0 END), 0), coalesce(sum(CASE WHEN state = 'failed' THEN 1 ELSE 0 END), 0),
 min(CASE WHEN state = 'queued' THEN next_attempt END) FROM notify_messages`).Scan(&q.Queued, &q.Sent, &q.Failed, &oldest)
	if err != nil {
		return NotifyQueue{}, fmt.Errorf("read the message queue: %w", translate(err))
	}
	if oldest.Valid {
		t := time.Unix(oldest.Int64, 0).UTC()
		q.OldestDue = &t
	}
	return q, nil
}

// NotifyOptOuts are the rules user opted out of, sorted.
func (s *Ledger) NotifyOptOuts(ctx context.Context, user string) ([]string, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT rule FROM notify_optout WHERE user = ? ORDER BY rule LIMIT 1000`, user)
	if err != nil {
		return nil, fmt.Errorf("read opt-outs of %s: %w", user, translate(err))
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var r string
		if err := rows.Scan(&r); err != nil {
			return nil, fmt.Errorf("read opt-outs of %s: %w", user, translate(err))
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read opt-outs of %s: %w", user, translate(err))
	}
	return out, nil
}

// IdleGPU is one GPU of a running job run with what its samples of the
// last window say: the rows IdleGPUs returns.
type IdleGPU struct {
	Row                      int64 // the run: JobRow.Row
	Cluster                  string
	JobID                    int64
	Restart                  int
	User, Account, Partition string
	Comment                  string
	QOS                      string // "" when sacct was not asked yet
	Start                    int64  // Unix seconds
	JobGPUs                  int64  // the run's GPUs on all nodes
	Node                     string
	Index                    *int64
	UUID                     string
	GPUID                    int64 // the ledger's id of the GPU
	// WindowMs is the time the GPU's samples cover since the window's
	// start (counted by 5-minute buckets); BusyMs the part of it that
	// was not idle for the job; NewestMs the end of its newest sample
	// (Unix ms; 0 when none).
	WindowMs, BusyMs, NewestMs int64
	// IdleSinceMs is when the GPU was last busy for the run (the end of
	// its last bucket with a busy sample; the run's start when none):
	// filled by IdleSince.
	IdleSinceMs int64
}

// IdleGPUs lists the GPUs of at most limit running job runs (runs
// started at or before from; newest first) with their samples counted
// from the 5-minute bucket that holds from (Unix ms) on: the idle rule
// needs no sample older than its window, so that a year's ledger costs
// it no more than a day's.
func (s *Ledger) IdleGPUs(ctx context.Context, fromMs int64, limit int) (out []IdleGPU, err error) {
	err = s.ReadSnapshot(ctx, func(r *Ledger) error {
		out, err = r.idleGPUs(ctx, fromMs, limit)
		return err
	})
	return out, err
}

func (s *Ledger) idleGPUs(ctx context.Context, fromMs int64, limit int) ([]IdleGPU, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT j.id, j.cluster, j.job_id, j.restart, j.user, j.account, j.partition, coalesce(j.comment, ''), coalesce(j.qos, ''), j.start, j.gpus,
 n.name, g.idx, g.uuid, g.id, coalesce(sum(b.window_ms), 0), coalesce(sum(b.window_ms - b.idle_ms), 0), coalesce(max(b.end_ms), 0)
 FROM (SELECT * FROM jobs WHERE end IS NULL AND start IS NOT NULL AND start * 1000 <= ?1 ORDER BY start DESC, id DESC LIMIT ?3) j
 JOIN job_gpus jg ON jg.job = j.id JOIN gpus g ON g.id = jg.gpu_id JOIN nodes n ON n.id = jg.node_id
 LEFT JOIN series_buckets b ON b.gpu_id = jg.gpu_id AND b.job = j.job_id AND b.restart = j.restart AND b.bucket_ms >= ?2
 GROUP BY j.id, j.cluster, j.job_id, j.restart, j.user, j.account, j.partition, j.comment, j.qos, j.start, j.gpus, n.id, n.name, g.id, g.idx, g.uuid
 ORDER BY j.start DESC, j.id DESC, n.name, g.idx`, fromMs, fromMs-fromMs%300_000, limit)
	if err != nil {
		return nil, fmt.Errorf("read running GPUs: %w", translate(err))
	}
	defer rows.Close()
	var out []IdleGPU
	for rows.Next() {
		var g IdleGPU
		var idx sql.NullInt64
		if err := rows.Scan(&g.Row, &g.Cluster, &g.JobID, &g.Restart, &g.User, &g.Account, &g.Partition, &g.Comment, &g.QOS, &g.Start, &g.JobGPUs,
			&g.Node, &idx, &g.UUID, &g.GPUID, &g.WindowMs, &g.BusyMs, &g.NewestMs); err != nil {
			return nil, fmt.Errorf("read running GPUs: %w", translate(err))
		}
		g.Index = ptrInt(idx)
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read running GPUs: %w", translate(err))
	}
	// A window reaching before the fold mark counts the packed buckets too.
	mark, err := s.foldedMark(ctx)
	if err != nil {
		return nil, fmt.Errorf("read running GPUs: %w", err)
	}
	if from := fromMs - fromMs%300_000; from < mark {
		for i := range out {
			if err := s.addPackedIdle(ctx, &out[i], from, mark); err != nil {
				return nil, fmt.Errorf("read running GPUs: %w", err)
			}
		}
	}
	return out, nil
}

// IdleSince fills each GPU's IdleSinceMs from its run's buckets: for the
// few GPUs found idle through a whole window, not for every running one.
func (s *Ledger) IdleSince(ctx context.Context, gpus []IdleGPU) error {
	return s.ReadSnapshot(ctx, func(r *Ledger) error { return r.idleSince(ctx, gpus) })
}

func (s *Ledger) idleSince(ctx context.Context, gpus []IdleGPU) error {
	mark, err := s.foldedMark(ctx)
	if err != nil {
		return fmt.Errorf("read when GPUs were last busy: %w", err)
	}
	for i := range gpus {
		g := &gpus[i]
		var busy sql.NullInt64
		err := s.db.QueryRowContext(ctx, `SELECT max(end_ms) FROM series_buckets
 WHERE gpu_id = ? AND job = ? AND restart = ? AND idle_ms < window_ms`, g.GPUID, g.JobID, g.Restart).Scan(&busy)
		if err != nil {
			return fmt.Errorf("read when GPU %s was last busy: %w", g.UUID, translate(err))
		}
		if mark != math.MinInt64 {
			if busy, err = s.packedBusyEnd(ctx, g, busy); err != nil {
				return fmt.Errorf("read when GPU %s was last busy: %w", g.UUID, err)
			}
		}
		g.IdleSinceMs = max(busy.Int64, g.Start*1000)
	}
	return nil
}

// NotifySentSince counts the messages sent since since, per recipient:
// the notifier's rate limit.
func (s *Ledger) NotifySentSince(ctx context.Context, since time.Time) (map[string]int, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT recipient, count(*) FROM notify_messages WHERE state = 'sent' AND sent_at >= ? GROUP BY recipient LIMIT ?`,
		since.Unix(), MaxNotifyList)
	if err != nil {
		return nil, fmt.Errorf("count messages sent: %w", translate(err))
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var r string
		var n int
		if err := rows.Scan(&r, &n); err != nil {
			return nil, fmt.Errorf("count messages sent: %w", translate(err))
		}
		out[r] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("count messages sent: %w", translate(err))
	}
	return out, nil
}

// NotifyByKey reads the message kept under key; ok is false when there
// is none.
func (s *Ledger) NotifyByKey(ctx context.Context, key string) (m NotifyMessage, ok bool, err error) {
	m, err = scanNotify(s.db.QueryRowContext(ctx, `SELECT `+notifyColumns+` FROM notify_messages WHERE key = ?`, key))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return NotifyMessage{}, false, nil
	case err != nil:
		return NotifyMessage{}, false, fmt.Errorf("read message %s: %w", key, translate(err))
	}
	return m, true, nil
}
