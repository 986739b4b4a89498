package web

import (
	"context"
	"errors"
	"sync"

	"github.com/aicloud/gpusuite/internal/report"
)

// jobFlight lets concurrent requests for one job's detail share a single
// read: clients looping the page of a long job (issue 29: 1.38 M samples)
// then cost one read at a time, not one per accounting slot. Nothing is
// kept after the read ends, so no answer is older than its request.
type jobFlight struct {
	mu    sync.Mutex
	calls map[string]*jobCall
}

type jobCall struct {
	done chan struct{}
	det  *report.Detail
	err  error
	// waiters counts the callers sharing the read (under jobFlight.mu).
	waiters int
}

func newJobFlight() *jobFlight { return &jobFlight{calls: map[string]*jobCall{}} }

// do returns read's answer for key, read once for every caller that asks
// while it runs. A caller whose first reader gave up (its client left or
// its deadline passed) reads for itself. The Detail is shared: callers
// only read it.
func (f *jobFlight) do(ctx context.Context, key string, read func() (*report.Detail, error)) (*report.Detail, error) {
	f.mu.Lock()
	if c, ok := f.calls[key]; ok {
		c.waiters++
		f.mu.Unlock()
		select {
		case <-c.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if c.err != nil && (errors.Is(c.err, context.Canceled) || errors.Is(c.err, context.DeadlineExceeded)) && ctx.Err() == nil {
			return read()
		}
		return c.det, c.err
	}
	c := &jobCall{done: make(chan struct{})}
	f.calls[key] = c
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.calls, key)
		f.mu.Unlock()
		close(c.done)
	}()
	c.det, c.err = read()
	return c.det, c.err
}
