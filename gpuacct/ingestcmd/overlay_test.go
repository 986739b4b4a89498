package ingestcmd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
)

// TestFlagsOverFile: each option of ingest and serve that names a key
// replaces the file's value of that key, and only that one (flag > file).
// --interval and --metrics-listen are serve's alone (its servecmd adds
// them, as here); Config applies them for both.
func TestFlagsOverFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gpusuite.toml")
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
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := append(Flags(), &cli.DurationFlag{Name: "interval"}, &cli.StringFlag{Name: "metrics-listen"})
	run := func(t *testing.T, args ...string) config.Config {
		t.Helper()
		var got config.Config
		a := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()},
			Commands: []*cli.Command{{Name: "ingest", Flags: flags, Action: func(c *cli.Context) error {
				var err error
				got, err = Config(c, func(string) string { return "" })
				return err
			}}}}
		if err := a.Run(append([]string{"gpuacct", "--config", file, "ingest"}, args...)); err != nil {
			t.Fatalf("ingest %v: %v", args, err)
		}
		return got
	}
	fromFile := run(t)
	for _, tc := range []struct {
		flag, value string
		set         func(*config.Config)
	}{
		{"db", "/flag/acct.db", func(c *config.Config) { c.Store.Path = "/flag/acct.db" }},
		{"store-url", "postgres://flag/acct", func(c *config.Config) { c.Store.URL = "postgres://flag/acct" }},
		{"incoming", "/flag/incoming", func(c *config.Config) { c.Ingest.Incoming = "/flag/incoming" }},
		{"quarantine", "/flag/quarantine", func(c *config.Config) { c.Ingest.Quarantine = "/flag/quarantine" }},
		{"archive", "/flag/archive", func(c *config.Config) { c.Ingest.Archive = "/flag/archive" }},
		{"keep", "delete", func(c *config.Config) { c.Ingest.Keep = "delete" }},
		{"service-user", "flaguser", func(c *config.Config) { c.Ingest.ServiceUser = "flaguser" }},
		{"sacct", "/flag/sacct", func(c *config.Config) { c.Ingest.Sacct = "/flag/sacct" }},
		{"sacctmgr", "", func(c *config.Config) { c.Ingest.Sacctmgr = "" }},
		{"log-level", "debug", func(c *config.Config) { c.Ingest.LogLevel = "debug" }},
		{"metrics-listen", "127.0.0.1:9202", func(c *config.Config) { c.Ingest.MetricsListen = "127.0.0.1:9202" }},
		{"interval", "7m", func(c *config.Config) { c.Ingest.Interval = config.Dur(7 * time.Minute) }},
	} {
		t.Run(tc.flag, func(t *testing.T) {
			want := fromFile
			tc.set(&want)
			if diff := cmp.Diff(want, run(t, "--"+tc.flag, tc.value)); diff != "" {
				t.Errorf("--%s %q (-want +got):\n%s", tc.flag, tc.value, diff)
			}
		})
	}
}
