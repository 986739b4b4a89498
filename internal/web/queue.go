package web

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
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

	// waits is the ledger's median waits as last read (waitsAt),
	// reread in the background once older than waitsEvery; reading
	// says a reread is under way.
	waits   []slurmstate.Wait
	waitsAt time.Time
	reading bool
}

const (
	// waitsEvery is how often the board rereads the median waits: a
	// week's median moves slowly, and each read scans a week of jobs.
	waitsEvery = 5 * time.Minute
	// waitsTimeout bounds one read of them.
	waitsTimeout = 10 * time.Second
)

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

// Waits is the median waits as last read, and starts a reread through
// read when they are older than waitsEvery and none is under way: the
// board's page never waits on the ledger (its first render has none).
func (q *Queue) Waits(now time.Time, read func(ctx context.Context, now time.Time) ([]slurmstate.Wait, error)) []slurmstate.Wait {
	if q == nil {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.reading && now.Sub(q.waitsAt) >= waitsEvery {
		q.reading = true
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), waitsTimeout)
			defer cancel()
			got, err := read(ctx, now)
			q.mu.Lock()
			defer q.mu.Unlock()
			q.reading, q.waitsAt = false, now
			if err != nil {
				q.log.Debug("median waits not read from the ledger; keeping the last", "err", err)
				return
			}
			q.waits = got
		}()
	}
	return q.waits
}

// readWaits reads the median waits of the runs that started over
// slurmstate.WaitWindow before now.
func (h *Handler) readWaits(ctx context.Context, now time.Time) ([]slurmstate.Wait, error) {
	c, release, err := h.src.acquire(ctx)
	if err != nil {
		return nil, err
	}
	defer release()
	ws, _, err := c.rep.Waits(ctx, now.Add(-slurmstate.WaitWindow), now)
	if err != nil {
		return nil, err
	}
	return report.QueueWaits(ws), nil
}

// queueView is the board's queue table.
type queueView struct {
	At     string
	Rows   []queueRow
	Unread int
	Waits  []waitRow
}

// waitRow is one line of the median waits: "jobs asking for GPUs
// GPUs of Model started within Wait (median of Jobs, last 7 days)".
type waitRow struct {
	Model      string
	GPUs, Jobs int64
	Wait       string
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
	v := &queueView{At: h.tr.Time(q.At.In(h.o.Location), "2006-01-02 15:04"), Unread: q.Unread}
	for _, r := range q.Rows {
		row := queueRow{Partition: r.Partition, Model: r.Model, Jobs: r.Jobs, GPUs: r.GPUs, Wait: missing, Start: missing}
		if !r.Oldest.IsZero() {
			row.Wait = dur(int64(q.At.Sub(r.Oldest) / time.Second))
		}
		if !r.NextStart.IsZero() {
			row.Start = h.tr.Time(r.NextStart.In(h.o.Location), "2006-01-02 15:04")
		}
		v.Rows = append(v.Rows, row)
	}
	for _, st := range h.o.Queue.Waits(h.o.Now(), h.readWaits) {
		v.Waits = append(v.Waits, waitRow{Model: st.Model, GPUs: st.GPUs, Jobs: int64(st.Jobs), Wait: dur(st.MedianS)})
	}
	return v
}
