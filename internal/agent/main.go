package agent

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/coreos/go-systemd/v22/daemon"
	versioncollector "github.com/prometheus/client_golang/prometheus/collectors/version"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
)

// initTimeout bounds nvmlInit, which takes seconds on a server without
// persistence mode.
const initTimeout = 60 * time.Second

// Main opens NVML (or the simulated GPUs the config asks for) and runs the
// agent until ctx ends.
func Main(ctx context.Context, cfg config.Config, node string, log *slog.Logger) error {
	lib, err := gpu.Open(ctx, cfg.GPU, node, initTimeout)
	if err != nil {
		if cfg.GPU.Backend == "simulated" {
			return fmt.Errorf("open simulated GPUs: %w", err)
		}
		return fmt.Errorf("open NVML: %w (is the NVIDIA driver loaded? gpu.backend = \"simulated\" is for tests and demos only)", err)
	}
	defer lib.Close()
	lib.Timeout = cfg.Agent.NVMLTimeout.Duration
	a, err := New(cfg, cfg.Cluster.Name, node, Deps{Lib: lib, Now: cfg.GPU.Clock(), Log: log})
	if err != nil {
		return err
	}
	// gpusuite_build_info says which build answers on /metrics.
	a.Registry().MustRegister(versioncollector.NewCollector("gpusuite"))
	if cfg.GPU.Backend == "simulated" {
		log.Warn("sampling SIMULATED GPUs (gpu.backend = \"simulated\")", "count", cfg.GPU.Simulated.Count)
	}
	return a.Run(ctx, cfg.Agent.SocketPath(cfg.Spool.Dir), cfg.Agent.MetricsListen, systemdNotifier{log: log})
}

// systemdNotifier talks to systemd through $NOTIFY_SOCKET.
type systemdNotifier struct{ log *slog.Logger }

func (s systemdNotifier) Notify(state string) {
	if _, err := daemon.SdNotify(false, state); err != nil {
		s.log.Warn("systemd notification failed", "state", state, "err", err)
	}
}

func (s systemdNotifier) WatchdogInterval() time.Duration {
	d, err := daemon.SdWatchdogEnabled(false)
	if err != nil {
		s.log.Warn("WATCHDOG_USEC unusable; watchdog off", "err", err)
		return 0
	}
	return d
}
