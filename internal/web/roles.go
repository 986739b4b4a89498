package web

import (
	"context"
	"fmt"
	"log/slog"
	"os/exec"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/boundcmd"
	"github.com/aicloud/gpusuite/internal/slurm"
)

// RolesEvery is how often serve asks Slurm for its coordinators: they
// change when an admin runs sacctmgr, rarely, and each read is two
// sacctmgr calls to slurmdbd.
const RolesEvery = 5 * time.Minute

// maxRolesOutput bounds each sacctmgr answer: a line an association, so
// some hundred thousand of them.
const maxRolesOutput = 16 << 20

// Roles is Slurm's account coordinators as serve last read them: under
// web.private_data a coordinator sees the users of the accounts they
// coordinate (docs/dashboard.md "Private data"). A failed read keeps
// the last answer; nil knows no coordinator.
type Roles struct {
	sacctmgr string
	timeout  time.Duration
	log      *slog.Logger

	mu      sync.Mutex
	last    *slurm.Coordination
	failing bool // the last read failed: logged once until one succeeds
}

// NewRoles reads the coordinators with the sacctmgr program, each call
// within timeout.
func NewRoles(sacctmgr string, timeout time.Duration, log *slog.Logger) *Roles {
	return &Roles{sacctmgr: sacctmgr, timeout: timeout, log: log}
}

// Current is the last answer read; nil before the first.
func (r *Roles) Current() *slurm.Coordination {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.last
}

// Run reads the coordinators now and every RolesEvery until ctx ends.
func (r *Roles) Run(ctx context.Context) {
	tick := time.NewTicker(RolesEvery)
	defer tick.Stop()
	for {
		_ = r.Refresh(ctx)
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Refresh reads the coordinators once. A failure keeps the last answer
// and is logged once, until a read succeeds again.
func (r *Roles) Refresh(ctx context.Context) error {
	c, err := r.read(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		if !r.failing {
			r.log.Warn("slurm coordinators not read; keeping the last answer", "err", err)
		}
		r.failing = true
		return err
	}
	if r.failing {
		r.log.Info("slurm coordinators read again", "coordinators", c.Coordinators())
	}
	r.failing, r.last = false, c
	return nil
}

func (r *Roles) read(ctx context.Context) (*slurm.Coordination, error) {
	coords, err := r.sacct(ctx, slurm.CoordArgs)
	if err != nil {
		return nil, err
	}
	assocs, err := r.sacct(ctx, slurm.AssocArgs)
	if err != nil {
		return nil, err
	}
	c, skipped, err := slurm.ParseCoordination(coords, assocs)
	if err != nil {
		return nil, err
	}
	if skipped > 0 {
		r.log.Warn("sacctmgr lines not understood, left out of the coordinators", "lines", skipped)
	}
	return c, nil
}

// sacct runs one sacctmgr question within the timeout.
func (r *Roles) sacct(ctx context.Context, args []string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	out, line, err := boundcmd.Output(ctx, exec.CommandContext(ctx, r.sacctmgr, args...), maxRolesOutput)
	if err != nil && line != "" {
		return nil, fmt.Errorf("sacctmgr %s %s: %w: %s", args[2], args[3], err, line)
	}
	if err != nil {
		return nil, fmt.Errorf("sacctmgr %s %s: %w", args[2], args[3], err)
	}
	return out, nil
}
