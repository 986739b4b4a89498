package ingest

import (
	"context"
	"time"
)

// LostLock is closed once the open store no longer holds the writer lock
// (checked every `every` until ctx ends): on PostgreSQL the lock lives in
// a session of its own, and a server restart or a cut connection ends it
// while the pool carries on, so another writer may already have taken
// over. The daemon must then stop writing.
func (s *Setup) LostLock(ctx context.Context, every time.Duration) <-chan struct{} {
	lost := make(chan struct{})
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if !s.Store.HoldsLock(ctx) && ctx.Err() == nil {
				close(lost)
				return
			}
		}
	}()
	return lost
}
