// Package ingestcmd is `gpuacct ingest`'s command line, and the flags it
// shares with `gpuacct serve`. The ingester is internal/ingest.
package ingestcmd

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest"
)

// Flags are the options ingest and serve share.
func Flags() []cli.Flag {
	return append(cliwire.LedgerFlags(),
		&cli.StringFlag{Name: "incoming", Usage: "directory of per-node incoming directories (ingest.incoming)", EnvVars: []string{"GPUSUITE_INCOMING"}},
		&cli.StringFlag{Name: "quarantine", Usage: "where bad and refused files go (ingest.quarantine)", EnvVars: []string{"GPUSUITE_QUARANTINE"}},
		&cli.StringFlag{Name: "archive", Usage: "where ingested files go when keep=archive (ingest.archive)", EnvVars: []string{"GPUSUITE_ARCHIVE"}},
		&cli.StringFlag{Name: "keep", Usage: "archive or delete ingested files (ingest.keep)", EnvVars: []string{"GPUSUITE_INGEST_KEEP"}},
		&cli.StringFlag{Name: "service-user", Usage: "user that must own incoming files (ingest.service_user; default: the running user)", EnvVars: []string{"GPUSUITE_SERVICE_USER"}},
		&cli.StringFlag{Name: "sacct", Usage: "sacct program for Slurm's times of finished jobs, unfinished jobs and job comments, \"\" to never ask (ingest.sacct)", EnvVars: []string{"GPUSUITE_SACCT"}},
		&cli.StringFlag{Name: "sacctmgr", Usage: "sacctmgr program for Slurm's account tree, node events and reservations, \"\" to never ask (ingest.sacctmgr)", EnvVars: []string{"GPUSUITE_SACCTMGR"}},
		&cli.StringFlag{Name: "log-level", Usage: "debug, info, warn or error (ingest.log_level)", EnvVars: []string{"GPUSUITE_LOG_LEVEL"}},
	)
}

// Config loads the config file and applies the flags that were set:
// flag > env > file > default.
func Config(c *cli.Context, getenv func(string) string) (config.Config, error) {
	cfg, err := cliwire.LoadConfig(c, getenv)
	if err != nil {
		return cfg, err
	}
	cliwire.SetLedger(c, &cfg.Store)
	cliwire.SetStrings(c, map[string]*string{
		"incoming": &cfg.Ingest.Incoming, "quarantine": &cfg.Ingest.Quarantine, "archive": &cfg.Ingest.Archive,
		"keep": &cfg.Ingest.Keep, "service-user": &cfg.Ingest.ServiceUser,
		"sacct": &cfg.Ingest.Sacct, "sacctmgr": &cfg.Ingest.Sacctmgr,
		"log-level": &cfg.Ingest.LogLevel, "metrics-listen": &cfg.Ingest.MetricsListen,
	})
	if c.IsSet("interval") {
		cfg.Ingest.Interval = config.Dur(c.Duration("interval"))
	}
	cfg.FollowLedger()
	return cfg, cliwire.Validate(c, &cfg)
}

// Command is `gpuacct ingest`: one pass, for cron or by hand.
func Command(stdout, stderr io.Writer, getenv func(string) string) *cli.Command {
	return &cli.Command{
		Name:  "ingest",
		Usage: "take every shipped record into the accounting database, once (one pass)",
		UsageText: `gpuacct ingest [options]

Reads <incoming>/<node>/ for every node, validates each file, stores its
records (a record already stored changes nothing), then archives or deletes
the file. Bad files go to quarantine/ with a .reason; files not owned by the
service user, or in a directory others can write, are refused the same way.
Exits non-zero when the pass could not finish (database locked by 'gpuacct
serve', disk full, ...); what was committed stays, the rest waits. With
--wait it waits for the writer that holds the ledger to let go instead
(Ctrl-C stops the wait). --store-url (store.url) names a PostgreSQL ledger
in place of the SQLite file of --db. Where no 'gpuacct serve' runs, cron
runs it every few minutes as the service user (an /etc/cron.d line,
docs/install.md).

Examples:
   gpuacct ingest                                  # paths from /etc/gpusuite/gpusuite.toml
   gpuacct ingest --db /tmp/acct.db --incoming /tmp/incoming --keep delete
   gpuacct ingest --wait --store-url postgres://gpusuite@db.example.org/gpusuite`,
		Flags: append(Flags(),
			&cli.BoolFlag{Name: "wait", Usage: "wait for the writer that holds the ledger (gpuacct serve) to let go, instead of failing at once"}),
		Action: cliwire.NoArgs(func(c *cli.Context) error {
			cfg, err := Config(c, getenv)
			if err != nil {
				return err
			}
			s, err := ingest.Prepare(cfg, stderr, getenv, "gpuacct-ingest")
			if err != nil {
				return err
			}
			defer s.Close()
			ctx, stop := signal.NotifyContext(c.Context, os.Interrupt, syscall.SIGTERM)
			defer stop()
			w := ingest.Writer{Wait: c.Bool("wait"), OnWait: func(holder string) {
				s.Log.Warn("another writer holds the ledger: " + holder + "; waiting for it to let go")
			}}
			if err := s.OpenStore(ctx, w); err != nil {
				return err
			}
			return s.Once(ctx, stdout)
		}),
	}
}
