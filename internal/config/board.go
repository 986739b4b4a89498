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
	// SlurmInterval is how often gpuacct serve re-reads Slurm's nodes and
	// reservations for the web board (one read at a time, each bounded by
	// SlurmTimeout).
	SlurmInterval Duration `toml:"slurm_interval"`
	// SlurmFile, when set, is a file of Slurm's view (slurmstate.WriteFile,
	// as gpuacct demo serve writes its simulated Slurm's) that gpuacct
	// free and status read instead of asking Slurm.
	SlurmFile string `toml:"slurm_file"`
	// IdleAlert is how long a GPU may stay allocated but idle before
	// gpuacct check and /metrics report it.
	IdleAlert Duration `toml:"idle_alert"`
}

func defaultBoard() Board {
	return Board{LiveDir: "/data/gpusuite/live", SlurmTimeout: Dur(10 * time.Second), SlurmInterval: Dur(30 * time.Second), IdleAlert: Dur(time.Hour)}
}

func (b *Board) validate() error {
	if !filepath.IsAbs(b.LiveDir) {
		return fmt.Errorf("key \"board.live_dir\": %q is not an absolute path", b.LiveDir)
	}
	if b.SlurmFile != "" && !filepath.IsAbs(b.SlurmFile) {
		return fmt.Errorf("key \"board.slurm_file\": %q is not an absolute path", b.SlurmFile)
	}
	if b.SlurmTimeout.Duration <= 0 || b.SlurmTimeout.Duration > 5*time.Minute {
		return fmt.Errorf("key \"board.slurm_timeout\": %s is outside 0s..5m", b.SlurmTimeout.Duration)
	}
	if b.SlurmInterval.Duration < time.Second || b.SlurmInterval.Duration > time.Hour {
		return fmt.Errorf("key \"board.slurm_interval\": %s is outside 1s..1h", b.SlurmInterval.Duration)
	}
	if b.IdleAlert.Duration < time.Minute || b.IdleAlert.Duration > 30*24*time.Hour {
		return fmt.Errorf("key \"board.idle_alert\": %s is outside 1m..720h", b.IdleAlert.Duration)
	}
	return nil
}
