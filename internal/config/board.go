package config

import (
	"fmt"
	"path/filepath"
	"time"
)

// Board configures gpuacct free and gpuacct status, the live board over
// the agents' snapshots and Slurm's view (docs/board.md).
type Board struct {
	// LiveDir holds one live snapshot per node (<node>.json), written by
	// each node's agent.
	LiveDir string `toml:"live_dir"`
	// SlurmTimeout bounds reading Slurm's nodes and reservations; past it
	// the board is shown without Slurm, and says so.
	SlurmTimeout Duration `toml:"slurm_timeout"`
}

func defaultBoard() Board {
	return Board{LiveDir: "/data/gpusuite/live", SlurmTimeout: Dur(10 * time.Second)}
}

func (b *Board) validate() error {
	if !filepath.IsAbs(b.LiveDir) {
		return fmt.Errorf("key \"board.live_dir\": %q is not an absolute path", b.LiveDir)
	}
	if b.SlurmTimeout.Duration <= 0 || b.SlurmTimeout.Duration > 5*time.Minute {
		return fmt.Errorf("key \"board.slurm_timeout\": %s is outside 0s..5m", b.SlurmTimeout.Duration)
	}
	return nil
}
