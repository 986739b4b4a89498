package config

import (
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// Agent configures `gpuacct agent`, the per-GPU-server daemon that samples
// every GPU, attributes samples to jobs and ships spooled records to /data
// (docs/agent.md).
type Agent struct {
	// Interval is the sampling period (1s minimum).
	Interval Duration `toml:"interval"`
	// IncomingDir is the shared directory records are shipped to; the
	// agent writes only into IncomingDir/<node>/. IncomingDir itself must
	// exist (it is on /data): the agent never creates it, so an unmounted
	// share is not mistaken for an empty local directory.
	IncomingDir string `toml:"incoming_dir"`
	// ShipUser, when set, is the user the shipped files and the node's
	// incoming directory belong to: the ingest service user, which trusts
	// only its own files. The agent writes on /data with that user's
	// file-system identity, so it works through root_squash too. Empty:
	// the agent's own user (root).
	ShipUser string `toml:"ship_user"`
	// StateDir holds the open sample segment and the checkpoint of
	// allocations and aggregates (node-local, root only).
	StateDir string `toml:"state_dir"`
	// Socket is the unix socket the hooks ask for GPU identities and
	// announce jobs on. Empty means agent.sock in spool.dir, whose 0700
	// root mode makes it root-only.
	Socket string `toml:"socket"`
	// SocketTimeout bounds one hook request on the socket; past it the
	// hook falls back to NVML.
	SocketTimeout Duration `toml:"socket_timeout"`
	// NVMLTimeout bounds the NVML calls of one GPU in one sample cycle.
	NVMLTimeout Duration `toml:"nvml_timeout"`
	// SegmentDuration is how long one raw sample segment collects before
	// it is closed and spooled; aggregates are spooled at the same time.
	SegmentDuration Duration `toml:"segment_duration"`
	// ShipInterval is how often the spool is shipped when all is well.
	ShipInterval Duration `toml:"ship_interval"`
	// ShipBackoffMax caps the retry delay while the share is unavailable.
	ShipBackoffMax Duration `toml:"ship_backoff_max"`
	// SpoolMaxBytes bounds the spool: past it raw sample segments are
	// dropped, oldest first. Events and aggregates are never dropped.
	SpoolMaxBytes int64 `toml:"spool_max_bytes"`
	// IdleThreshold is the GPU utilization (percent) under which an
	// allocated GPU counts as idle.
	IdleThreshold float64 `toml:"idle_threshold"`
	// ReinitAfter is how long GPUs must keep failing before NVML is shut
	// down and initialised again (a driver reload invalidates handles).
	ReinitAfter Duration `toml:"reinit_after"`
	// LiveDir is the shared directory (on /data) of the nodes' live-state
	// files: the agent replaces <LiveDir>/<node>.json every cycle, and the
	// head reads them for the live board. It must exist (the agent never
	// creates it). Empty: no live-state file.
	LiveDir string `toml:"live_dir"`
	// MetricsListen is the address of /metrics; empty disables it.
	MetricsListen string `toml:"metrics_listen"`
	// WebConfigFile is a Prometheus web configuration file (TLS, basic
	// auth, headers: the exporter toolkit's web-config.yml) for
	// /metrics; empty serves plain HTTP.
	WebConfigFile string `toml:"web_config_file"`
	// ProcRoot is where /proc is (for cgroup cross-checks).
	ProcRoot string `toml:"proc_root"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `toml:"log_level"`
	// Metrics names what each sample carries beyond the fixed fields:
	// metric sets or single metrics of record.Catalogue ("default" alone:
	// the fixed fields only).
	Metrics []string `toml:"metrics"`
	// ProfileSocket is the unix socket `gpuacct profile` asks on, open to
	// every local user (mode 0666; each request is checked against the
	// job's owner by SO_PEERCRED). Empty: no profiling.
	ProfileSocket string `toml:"profile_socket"`
	// ProfileMaxDuration bounds one profile's --for.
	ProfileMaxDuration Duration `toml:"profile_max_duration"`
}

// MaxProfileDuration is the most agent.profile_max_duration may be.
const MaxProfileDuration = 24 * time.Hour

func defaultAgent() Agent {
	return Agent{
		Interval:           Dur(10 * time.Second),
		IncomingDir:        "/data/gpusuite/incoming",
		LiveDir:            "/data/gpusuite/live",
		StateDir:           "/var/lib/gpusuite/agent",
		SocketTimeout:      Dur(time.Second),
		NVMLTimeout:        Dur(2 * time.Second),
		SegmentDuration:    Dur(5 * time.Minute),
		ShipInterval:       Dur(30 * time.Second),
		ShipBackoffMax:     Dur(5 * time.Minute),
		SpoolMaxBytes:      1 << 30,
		IdleThreshold:      1,
		ReinitAfter:        Dur(time.Minute),
		MetricsListen:      ":9467",
		ProcRoot:           "/proc",
		LogLevel:           "info",
		Metrics:            []string{record.SetDefault},
		ProfileSocket:      "/run/gpusuite/profile.sock",
		ProfileMaxDuration: Dur(time.Hour),
	}
}

// SocketPath is the hook socket's path for a spool directory.
func (a *Agent) SocketPath(spoolDir string) string {
	if a.Socket != "" {
		return a.Socket
	}
	return filepath.Join(spoolDir, "agent.sock")
}

func (a *Agent) validate() error {
	if a.Interval.Duration < time.Second {
		return fmt.Errorf("key \"agent.interval\": %s is below the 1s minimum", a.Interval.Duration)
	}
	for _, p := range []struct{ key, v string }{
		{"agent.incoming_dir", a.IncomingDir}, {"agent.state_dir", a.StateDir}, {"agent.proc_root", a.ProcRoot},
	} {
		if !strings.HasPrefix(p.v, "/") {
			return fmt.Errorf("key %q: %q is not an absolute path", p.key, p.v)
		}
	}
	if a.LiveDir != "" && !strings.HasPrefix(a.LiveDir, "/") {
		return fmt.Errorf("key \"agent.live_dir\": %q is not an absolute path (\"\" turns the live-state file off)", a.LiveDir)
	}
	if a.Socket != "" && !strings.HasPrefix(a.Socket, "/") {
		return fmt.Errorf("key \"agent.socket\": %q is not an absolute path", a.Socket)
	}
	for _, d := range []struct {
		key string
		v   time.Duration
	}{
		{"agent.socket_timeout", a.SocketTimeout.Duration}, {"agent.nvml_timeout", a.NVMLTimeout.Duration},
		{"agent.ship_interval", a.ShipInterval.Duration}, {"agent.ship_backoff_max", a.ShipBackoffMax.Duration},
		{"agent.reinit_after", a.ReinitAfter.Duration},
	} {
		if d.v <= 0 {
			return fmt.Errorf("key %q: must be positive", d.key)
		}
	}
	// the hooks wait on the socket, so its bound is a hook-path bound
	if err := hookDuration("agent.socket_timeout", a.SocketTimeout.Duration, time.Nanosecond); err != nil {
		return err
	}
	if a.SegmentDuration.Duration < a.Interval.Duration {
		return fmt.Errorf("key \"agent.segment_duration\": %s is shorter than agent.interval %s", a.SegmentDuration.Duration, a.Interval.Duration)
	}
	if a.SpoolMaxBytes < 1<<20 {
		return fmt.Errorf("key \"agent.spool_max_bytes\": %d is below 1 MiB", a.SpoolMaxBytes)
	}
	if a.IdleThreshold < 0 || a.IdleThreshold > 100 {
		return fmt.Errorf("key \"agent.idle_threshold\": %g is outside 0..100 percent", a.IdleThreshold)
	}
	if _, err := record.ExpandMetrics(a.Metrics); err != nil {
		return fmt.Errorf("key \"agent.metrics\": %w", err)
	}
	if a.ProfileSocket != "" && !strings.HasPrefix(a.ProfileSocket, "/") {
		return fmt.Errorf("key \"agent.profile_socket\": %q is not an absolute path (\"\" turns profiling off)", a.ProfileSocket)
	}
	if d := a.ProfileMaxDuration.Duration; d < time.Second || d > MaxProfileDuration {
		return fmt.Errorf("key \"agent.profile_max_duration\": %s is outside 1s..%s", d, MaxProfileDuration)
	}
	if err := checkLogLevel("agent.log_level", a.LogLevel); err != nil {
		return err
	}
	return nil
}
