package agent

import (
	"context"
	"time"

	"github.com/aicloud/gpusuite/internal/ship"
)

// backlog updates the spool backlog gauges and returns the file count.
func (a *Agent) backlog() int {
	b, err := ship.CountBacklog(a.spool.Path)
	if err != nil {
		return 0
	}
	for t, c := range b.Files {
		a.metrics.backlogFiles.WithLabelValues(string(t)).Set(float64(c))
	}
	a.metrics.backlogBytes.Set(float64(b.Bytes))
	return b.Total
}

// requestScan asks the loop to apply spooled events and returns the names
// it handled; nil when the loop is gone.
func (a *Agent) requestScan(ctx context.Context) []string {
	reply := make(chan []string, 1)
	select {
	case a.scanReq <- reply:
	case <-ctx.Done():
		return nil
	}
	select {
	case names := <-reply:
		return names
	case <-ctx.Done():
		return nil
	}
}

// shipLoop ships on agent.ship_interval, backing off from one second up
// to agent.ship_backoff_max while the share is unavailable.
func (a *Agent) shipLoop(ctx context.Context) {
	backoff := time.Duration(0)
	failing := false
	for {
		n, err := a.shipper.Pass(ctx, a.requestScan(ctx))
		left := a.backlog()
		wait := a.cfg.ShipInterval.Duration
		if err != nil && ctx.Err() == nil {
			a.metrics.shipErrors.Inc()
			if backoff == 0 {
				backoff = time.Second
			} else {
				backoff = min(2*backoff, a.cfg.ShipBackoffMax.Duration)
			}
			wait = backoff
			a.log.Warn("shipping failed; retrying", "err", err, "backlog_files", left, "retry_in", backoff, "shipped", n)
			failing = true
		} else if err == nil {
			backoff = 0
			a.metrics.lastShip.Set(float64(a.now().UnixNano()) / 1e9)
			if failing {
				a.log.Info("shipping works again", "shipped", n, "backlog_files", left)
				failing = false
			}
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Ship applies the spooled job events and ships the spool once, for
// callers that drive the agent themselves (Cycle, Ship, Stop from one
// goroutine: tests, generators of simulated data); Run ships on its own.
func (a *Agent) Ship(ctx context.Context) (int, error) {
	return a.shipper.Pass(ctx, a.scanEvents())
}
