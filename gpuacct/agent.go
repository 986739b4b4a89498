package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/agent"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/logging"
	"github.com/aicloud/gpusuite/internal/webconfig"
)

// agentCommand is `gpuacct agent`; the agent itself is internal/agent.
func agentCommand(stdout, stderr io.Writer, getenv func(string) string) *cli.Command {
	return &cli.Command{
		Name:  "agent",
		Usage: "sample every GPU, attribute samples to Slurm jobs, ship records to /data (GPU servers, systemd)",
		UsageText: `gpuacct agent [--config FILE] [options]

Runs on every GPU server as the systemd service gpuacct-agent (Type=notify,
WatchdogSec). It samples every GPU through NVML each --interval, attributes
each sample to the jobs the prolog recorded (cross-checked by each process's
cgroup), keeps per job × GPU aggregates and raw sample segments in the
node-local spool, and ships the spool to <incoming-dir>/<node>/.

Examples:
   gpuacct agent                                   # as the unit runs it
   gpuacct agent --interval 1s --log-level debug   # watch it sample by hand
   gpuacct agent --metrics default,gpm,nvlink       # GPM counters and NVLink traffic too
   gpuacct agent --incoming-dir /mnt/test/incoming --metrics-listen 127.0.0.1:9466
   curl -s localhost:9466/metrics | grep gpusuite_gpu_utilization`,
		Flags: []cli.Flag{
			&cli.DurationFlag{Name: "interval", Usage: "sampling interval, 1s minimum (agent.interval)", EnvVars: []string{"GPUSUITE_AGENT_INTERVAL"}},
			&cli.StringFlag{Name: "spool-dir", Usage: "node-local spool (spool.dir)", EnvVars: []string{"GPUSUITE_SPOOL_DIR"}},
			&cli.StringFlag{Name: "incoming-dir", Usage: "shared incoming directory; records go to <dir>/<node>/ (agent.incoming_dir)", EnvVars: []string{"GPUSUITE_AGENT_INCOMING_DIR"}},
			&cli.StringFlag{Name: "live-dir", Usage: "shared directory of the nodes' live-state files, <dir>/<node>.json; empty to disable (agent.live_dir)", EnvVars: []string{"GPUSUITE_AGENT_LIVE_DIR"}},
			&cli.StringFlag{Name: "ship-user", Usage: "user the shipped files belong to: the ingest service user (agent.ship_user)", EnvVars: []string{"GPUSUITE_AGENT_SHIP_USER"}},
			&cli.StringFlag{Name: "state-dir", Usage: "node-local state: open segment and checkpoint (agent.state_dir)", EnvVars: []string{"GPUSUITE_AGENT_STATE_DIR"}},
			&cli.StringFlag{Name: "socket", Usage: "hook socket path (agent.socket; default <spool-dir>/agent.sock)", EnvVars: []string{"GPUSUITE_AGENT_SOCKET"}},
			&cli.StringFlag{Name: "metrics-listen", Usage: "address of /metrics, empty to disable (agent.metrics_listen)", EnvVars: []string{"GPUSUITE_AGENT_METRICS_LISTEN"}},
			&cli.StringFlag{Name: "web-config-file", Usage: "Prometheus web config `FILE` (TLS, basic auth) for /metrics (agent.web_config_file)", EnvVars: []string{"GPUSUITE_AGENT_WEB_CONFIG_FILE"}},
			&cli.StringFlag{Name: "node", Usage: "node name (cluster.node; default the short host name)", EnvVars: []string{"GPUSUITE_NODE"}},
			&cli.StringSliceFlag{Name: "metrics", Usage: "metric sets or single metrics each sample carries, comma-separated: the fixed fields' set, clocks, throttle, pcie, nvlink, gpm, ecc, all; single metrics in docs/records.md (agent.metrics)",
				EnvVars: []string{"GPUSUITE_AGENT_METRICS"}},
			&cli.StringFlag{Name: "profile-socket", Usage: "socket `gpuacct profile` asks on, empty to disable (agent.profile_socket)", EnvVars: []string{"GPUSUITE_AGENT_PROFILE_SOCKET"}},
			&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error (agent.log_level)", EnvVars: []string{"GPUSUITE_AGENT_LOG_LEVEL"}},
		},
		Action: cliwire.NoArgs(func(c *cli.Context) error {
			cfg, err := cliwire.LoadConfig(c, getenv)
			if err != nil {
				return err
			}
			applyAgentFlags(c, &cfg)
			if err := cliwire.Validate(c, &cfg); err != nil {
				return fmt.Errorf("agent options: %w", err)
			}
			if err := webconfig.Check(cfg.Agent.WebConfigFile, "agent.web_config_file, --web-config-file"); err != nil {
				return err
			}
			node := cfg.Cluster.Node
			if node == "" {
				h, err := os.Hostname()
				if err != nil {
					return fmt.Errorf("node name: %w (set cluster.node or --node)", err)
				}
				node, _, _ = strings.Cut(h, ".")
			}
			level, err := logging.ParseLevel(cfg.Agent.LogLevel)
			if err != nil {
				return err
			}
			log := logging.New("gpuacct-agent", stderr, level, getenv)
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
			defer stop()
			return agent.Main(ctx, cfg, node, log)
		}),
	}
}

func applyAgentFlags(c *cli.Context, cfg *config.Config) {
	if c.IsSet("interval") {
		cfg.Agent.Interval = config.Dur(c.Duration("interval"))
		if cfg.Agent.SegmentDuration.Duration < cfg.Agent.Interval.Duration {
			cfg.Agent.SegmentDuration = cfg.Agent.Interval
		}
	}
	if c.IsSet("metrics") {
		cfg.Agent.Metrics = c.StringSlice("metrics")
	}
	cliwire.SetStrings(c, map[string]*string{
		"spool-dir": &cfg.Spool.Dir, "incoming-dir": &cfg.Agent.IncomingDir, "ship-user": &cfg.Agent.ShipUser,
		"live-dir":  &cfg.Agent.LiveDir,
		"state-dir": &cfg.Agent.StateDir, "socket": &cfg.Agent.Socket, "metrics-listen": &cfg.Agent.MetricsListen,
		"web-config-file": &cfg.Agent.WebConfigFile,
		"node":            &cfg.Cluster.Node, "log-level": &cfg.Agent.LogLevel, "profile-socket": &cfg.Agent.ProfileSocket,
	})
}
