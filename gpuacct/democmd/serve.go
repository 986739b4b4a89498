package democmd

import (
	"io"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/demo"
)

// listenEnv names the listen address when --listen is not given; it may
// name a loopback address only.
const listenEnv = "GPUSUITE_DEMO_LISTEN"

// serveCommand is `gpuacct demo serve`.
func serveCommand(stdout, stderr io.Writer, getenv func(string) string) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the live board of a demo directory on this machine",
		UsageText: `gpuacct demo serve --dir DIR [--listen HOST:PORT]

Serves the dashboard of the directory gpuacct demo made: its ledger and
the live board, both kept alive. The demo's nodes run the real gpuacct
agent on simulated GPUs and write a snapshot every 2 s; the real prolog
and epilog start and end jobs of the demo's users every half minute; the
real ingest (gpuacct serve's) takes what the nodes ship into the ledger
within seconds, so every job on the board has its page; a simulated Slurm
puts the nodes in partitions gpu and long, drains one with a reason and
reserves one for a team, and keeps its view in DIR/slurm.json for
gpuacct free and status (--slurm-file); one GPU is booked in the ledger.
Open the
address it prints in a browser. Ctrl-C ends the jobs still running and
ingests them; nothing of DIR is removed.

It listens on loopback (` + demo.DefaultListen + `, or $` + listenEnv + `) and serves
beyond this machine only when --listen names such an address itself.

Examples:
   gpuacct demo serve --dir /tmp/gpusuite-demo
   gpuacct demo serve --dir /tmp/gpusuite-demo --listen 127.0.0.1:9000
   gpuacct demo serve --dir /tmp/gpusuite-demo --listen 0.0.0.0:8080   # others may look too`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dir", Usage: "the directory gpuacct demo made and printed (required)"},
			&cli.StringFlag{Name: "listen", Usage: "HOST:PORT to serve on ($" + listenEnv + ", loopback only)", DefaultText: demo.DefaultListen},
		},
		Action: func(c *cli.Context) error {
			o, err := serveOptions(c, getenv)
			if err != nil {
				return err
			}
			o.Log = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return demo.Serve(ctx, stdout, o)
		},
	}
}

// serveOptions reads and checks serve's command line: flag, then
// environment, then the default.
func serveOptions(c *cli.Context, getenv func(string) string) (demo.ServeOptions, error) {
	var o demo.ServeOptions
	if c.Args().Present() {
		return o, cliwire.Usagef("demo serve: unexpected argument %q: give the directory as --dir DIR", c.Args().First())
	}
	o.Dir = c.String("dir")
	if o.Dir == "" {
		return o, cliwire.Usagef("demo serve: --dir is required: the directory gpuacct demo printed (run gpuacct demo --dir DIR to make one)")
	}
	o.Listen = demo.DefaultListen
	explicit := c.IsSet("listen")
	source := "--listen"
	switch {
	case explicit:
		o.Listen = c.String("listen")
	case getenv(listenEnv) != "":
		o.Listen, source = getenv(listenEnv), listenEnv
	}
	host, _, err := net.SplitHostPort(o.Listen)
	if err != nil {
		return o, cliwire.Usagef("demo serve: %s %q is not HOST:PORT, as %s", source, o.Listen, demo.DefaultListen)
	}
	if !explicit && !loopback(host) {
		return o, cliwire.Usagef("demo serve: %s=%s would serve the demo beyond this machine; give --listen %s on the command line to mean it",
			listenEnv, o.Listen, o.Listen)
	}
	return o, nil
}

// loopback says whether host is this machine only: localhost or a
// loopback address ("" and 0.0.0.0 are every interface).
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
