package reportcmd

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

// TestFlagsOverFile: each option of the report commands that names a key
// replaces the file's value of that key, and only that one (flag > file).
func TestFlagsOverFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gpusuite.toml")
	body := `[store]
path = "/file/acct.db"
url = "postgres://file/acct"
[report]
tz = "UTC"
teams = "/file/teams.toml"
format = "table"
units = "hours"
`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	flags := append(append(append([]cli.Flag{dbFlag(), cliwire.StoreURLFlag()}, windowFlags()...), filterFlags()...), outputFlags()...)
	run := func(t *testing.T, args ...string) config.Config {
		t.Helper()
		var got config.Config
		d := Deps{Getenv: func(string) string { return "" }, Now: time.Now}
		a := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()},
			Commands: []*cli.Command{{Name: "report", Flags: flags, Action: func(c *cli.Context) error {
				e, err := load(c, d)
				if err == nil {
					got = e.cfg
				}
				return err
			}}}}
		if err := a.Run(append([]string{"gpuacct", "--config", file, "report"}, args...)); err != nil {
			t.Fatalf("report %v: %v", args, err)
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
		{"tz", "Local", func(c *config.Config) { c.Report.TZ = "Local" }},
		{"teams-file", "/flag/teams.toml", func(c *config.Config) { c.Report.Teams = "/flag/teams.toml" }},
		{"format", "json", func(c *config.Config) { c.Report.Format = "json" }},
		{"units", "percent", func(c *config.Config) { c.Report.Units = "percent" }},
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
