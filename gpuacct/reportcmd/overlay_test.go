package reportcmd

import (
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

// TestFlagsOverFile: each option of the report commands that names a key
// replaces the file's value of that key, and only that one (flag > file).
func TestFlagsOverFile(t *testing.T) {
	body := `[store]
path = "/file/acct.db"
url = "postgres://file/acct"
[report]
tz = "UTC"
teams = "/file/teams.toml"
format = "table"
units = "hours"
`
	flags := append(append(append(cliwire.LedgerFlags(), windowFlags()...), filterFlags()...), outputFlags()...)
	d := Deps{Getenv: func(string) string { return "" }, Now: time.Now}
	fromConfig := func(c *cli.Context) (config.Config, error) {
		e, err := load(c, d)
		if err != nil {
			return config.Config{}, err
		}
		return e.cfg, nil
	}
	cmdline.FlagsOverFile(t, "report", body, flags, fromConfig, []cmdline.FlagCase{
		{Flag: "db", Value: "/flag/acct.db", Set: func(c *config.Config) { c.Store.Path = "/flag/acct.db" }},
		{Flag: "store-url", Value: "postgres://flag/acct", Set: func(c *config.Config) { c.Store.URL = "postgres://flag/acct" }},
		{Flag: "tz", Value: "Local", Set: func(c *config.Config) { c.Report.TZ = "Local" }},
		{Flag: "teams-file", Value: "/flag/teams.toml", Set: func(c *config.Config) { c.Report.Teams = "/flag/teams.toml" }},
		{Flag: "format", Value: "json", Set: func(c *config.Config) { c.Report.Format = "json" }},
		{Flag: "units", Value: "percent", Set: func(c *config.Config) { c.Report.Units = "percent" }},
	})
}
