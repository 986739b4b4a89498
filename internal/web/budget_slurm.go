package web

import (
	"context"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/config"
)

// slurmLimitsAge is how long one reading of the associations' limits is
// shown: scontrol is not asked once per page.
const slurmLimitsAge = time.Minute

// slurmLimits is the last reading of Options.SlurmLimits.
type slurmLimits struct {
	mu sync.Mutex
	at time.Time
	ls []budget.SlurmLimit
}

// slurmLimitsOf asks scontrol for the associations' GrpTRESMins within
// board.slurm_timeout, where budgets are configured.
func slurmLimitsOf(cfg config.Config, bs []budget.Budget) func(context.Context) ([]budget.SlurmLimit, error) {
	if len(bs) == 0 {
		return nil
	}
	return func(ctx context.Context) ([]budget.SlurmLimit, error) {
		return budget.ReadSlurmLimits(ctx, cfg.Board.SlurmTimeout.Duration)
	}
}

// limits are the associations' limits read within the last minute; nil
// when they are not shown or Slurm did not answer (logged: the page is
// shown without them).
func (h *Handler) limits(ctx context.Context) []budget.SlurmLimit {
	if h.o.SlurmLimits == nil {
		return nil
	}
	s := h.slurm
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := time.Now(); s.at.IsZero() || now.Sub(s.at) >= slurmLimitsAge {
		ls, err := h.o.SlurmLimits(ctx)
		if err != nil {
			h.o.Log.Warn("budgets: Slurm's limits unread", "err", err)
		}
		s.at, s.ls = now, ls
	}
	return s.ls
}
