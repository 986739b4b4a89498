package ingestcmd

import (
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

// TestFlagsOverFile: each option of ingest and serve that names a key
// replaces the file's value of that key, and only that one (flag > file).
// --interval and --metrics-listen are serve's alone (its servecmd adds
// them, as here); Config applies them for both.
func TestFlagsOverFile(t *testing.T) {
	body := `[store]
path = "/file/acct.db"
url = "postgres://file/acct"
[ingest]
incoming = "/file/incoming"
quarantine = "/file/quarantine"
archive = "/file/archive"
keep = "archive"
service_user = "fileuser"
sacct = "/file/sacct"
sacctmgr = "/file/sacctmgr"
log_level = "warn"
metrics_listen = "127.0.0.1:9101"
interval = "5m"
`
	flags := append(Flags(), &cli.DurationFlag{Name: "interval"}, &cli.StringFlag{Name: "metrics-listen"})
	load := func(c *cli.Context) (config.Config, error) { return Config(c, func(string) string { return "" }) }
	cmdline.FlagsOverFile(t, "ingest", body, flags, load, []cmdline.FlagCase{
		{Flag: "db", Value: "/flag/acct.db", Set: func(c *config.Config) { c.Store.Path = "/flag/acct.db" }},
		{Flag: "store-url", Value: "postgres://flag/acct", Set: func(c *config.Config) { c.Store.URL = "postgres://flag/acct" }},
		{Flag: "incoming", Value: "/flag/incoming", Set: func(c *config.Config) { c.Ingest.Incoming = "/flag/incoming" }},
		{Flag: "quarantine", Value: "/flag/quarantine", Set: func(c *config.Config) { c.Ingest.Quarantine = "/flag/quarantine" }},
		{Flag: "archive", Value: "/flag/archive", Set: func(c *config.Config) { c.Ingest.Archive = "/flag/archive" }},
		{Flag: "keep", Value: "delete", Set: func(c *config.Config) { c.Ingest.Keep = "delete" }},
		{Flag: "service-user", Value: "flaguser", Set: func(c *config.Config) { c.Ingest.ServiceUser = "flaguser" }},
		{Flag: "sacct", Value: "/flag/sacct", Set: func(c *config.Config) { c.Ingest.Sacct = "/flag/sacct" }},
		{Flag: "sacctmgr", Value: "", Set: func(c *config.Config) { c.Ingest.Sacctmgr = "" }},
		{Flag: "log-level", Value: "debug", Set: func(c *config.Config) { c.Ingest.LogLevel = "debug" }},
		{Flag: "metrics-listen", Value: "127.0.0.1:9202", Set: func(c *config.Config) { c.Ingest.MetricsListen = "127.0.0.1:9202" }},
		{Flag: "interval", Value: "7m", Set: func(c *config.Config) { c.Ingest.Interval = config.Dur(7 * time.Minute) }},
	})
}
