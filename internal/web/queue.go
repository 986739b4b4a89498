package web

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// QueueEvery is how often serve asks Slurm what waits for GPUs: a
// queue changes by the minute, and each read is one squeue call.
const QueueEvery = time.Minute

// Queue is Slurm's pending jobs that ask for GPUs as serve last read
// them, for the board's queue table. A failed read keeps the last
// answer, which the table shows with its time; nil shows no table.
type Queue struct {
	read func(ctx context.Context) (slurmstate.Queue, error)
	log  *slog.Logger

	mu      sync.Mutex
	last    *slurmstate.Queue
	failing bool
}

// NewQueue reads the queue with read (slurmstate.Reader.Queue, bounded).
func NewQueue(read func(ctx context.Context) (slurmstate.Queue, error), log *slog.Logger) *Queue {
	return &Queue{read: read, log: log}
}

// Current is the last queue read; nil before the first.
func (q *Queue) Current() *slurmstate.Queue {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.last
}

// Run reads the queue now and every QueueEvery until ctx ends.
func (q *Queue) Run(ctx context.Context) {
	tick := time.NewTicker(QueueEvery)
	defer tick.Stop()
	for {
		_ = q.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Refresh reads the queue once. A failure keeps the last answer and is
// logged once, at debug: the board's own Slurm line says when Slurm is
// unreachable.
func (q *Queue) Refresh(ctx context.Context) error {
	got, err := q.read(ctx)
	q.mu.Lock()
	defer q.mu.Unlock()
	if err != nil {
		if !q.failing {
			q.log.Debug("slurm queue not read; keeping the last answer", "err", err)
		}
		q.failing = true
		return err
	}
	q.failing = false
	q.last = &got
	return nil
}

// queueView is the board's queue table.
type queueView struct {
	At     string
	Rows   []queueRow
	Unread int
}

type queueRow struct {
	Partition, Model string
	Jobs, GPUs       int
	Wait, Start      string
}

// queue is the table of the last queue read; nil when none was.
func (h *Handler) queue() *queueView {
	q := h.o.Queue.Current()
	if q == nil {
		return nil
	}
	v := &queueView{At: localTime(q.At.Unix(), h.o.Location), Unread: q.Unread}
	for _, r := range q.Rows {
		row := queueRow{Partition: r.Partition, Model: r.Model, Jobs: r.Jobs, GPUs: r.GPUs, Wait: missing, Start: missing}
		if !r.Oldest.IsZero() {
			row.Wait = dur(int64(q.At.Sub(r.Oldest) / time.Second))
		}
		if !r.NextStart.IsZero() {
			row.Start = localTime(r.NextStart.Unix(), h.o.Location)
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}
