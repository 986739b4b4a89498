package config

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestBoardSection(t *testing.T) {
	tests := []struct {
		name    string
		toml    string
		want    Board
		wantErr string
	}{
		{"defaults", "", Board{LiveDir: "/data/gpusuite/live", SlurmTimeout: Dur(10 * time.Second), SlurmInterval: Dur(30 * time.Second), IdleAlert: Dur(time.Hour)}, ""},
		{"set", "[board]\nlive_dir = \"/srv/live\"\nslurm_timeout = \"3s\"\nslurm_interval = \"5s\"\nidle_alert = \"20m\"\n", Board{LiveDir: "/srv/live", SlurmTimeout: Dur(3 * time.Second), SlurmInterval: Dur(5 * time.Second), IdleAlert: Dur(20 * time.Minute)}, ""},
		{"slurm file", "[board]\nslurm_file = \"/tmp/demo/slurm.json\"\n", Board{LiveDir: "/data/gpusuite/live", SlurmTimeout: Dur(10 * time.Second), SlurmInterval: Dur(30 * time.Second), IdleAlert: Dur(time.Hour), SlurmFile: "/tmp/demo/slurm.json"}, ""},
		{"relative slurm file", "[board]\nslurm_file = \"slurm.json\"\n", Board{}, `"board.slurm_file": "slurm.json" is not an absolute path`},
		{"fast slurm", "[board]\nslurm_interval = \"100ms\"\n", Board{}, `"board.slurm_interval"`},
		{"short idle alert", "[board]\nidle_alert = \"10s\"\n", Board{}, `"board.idle_alert"`},
		{"relative dir", "[board]\nlive_dir = \"live\"\n", Board{}, `"board.live_dir": "live" is not an absolute path`},
		{"zero timeout", "[board]\nslurm_timeout = \"0s\"\n", Board{}, `"board.slurm_timeout"`},
		{"long timeout", "[board]\nslurm_timeout = \"1h\"\n", Board{}, `"board.slurm_timeout"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, ok := parsed(t, tt.toml, tt.wantErr)
			if !ok {
				return
			}
			if diff := cmp.Diff(tt.want, cfg.Board); diff != "" {
				t.Errorf("board (-want +got):\n%s", diff)
			}
		})
	}
}
