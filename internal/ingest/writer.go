package ingest

import (
	"context"
	"time"
)

// LostLock is closed once the open store no longer holds the writer lock
// (checked every `every` until ctx ends). On PostgreSQL the lock lives on
// the writer's one session, and every batch already refuses to write
// without it (store.ErrLockLost); a server restart or a cut connection
// ends that session, another writer may take over, and the daemon must
// stop and start again as a waiting one rather than fail pass after pass.
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
