package cmdline

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
)

// FlagCase is one option of FlagsOverFile: --Flag Value on the line must
// change the file's configuration exactly as Set does.
type FlagCase struct {
	Flag, Value string
	Set         func(*config.Config)
}

// FlagsOverFile checks that each option in cases replaces the value that
// the configuration file body gives its key, and only that one (flag >
// file): it runs "gpuacct --config FILE cmd [--flag value]" with a command
// of these flags whose action loads the configuration through load.
func FlagsOverFile(t *testing.T, cmd, body string, flags []cli.Flag, load func(*cli.Context) (config.Config, error), cases []FlagCase) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "gpusuite.toml")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, args ...string) config.Config {
		t.Helper()
		var got config.Config
		a := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()},
			Commands: []*cli.Command{{Name: cmd, Flags: flags, Action: func(c *cli.Context) error {
				var err error
				got, err = load(c)
				return err
			}}}}
		if err := a.Run(append([]string{"gpuacct", "--config", file, cmd}, args...)); err != nil {
			t.Fatalf("%s %v: %v", cmd, args, err)
		}
		return got
	}
	fromFile := run(t)
	for _, tc := range cases {
		t.Run(tc.Flag, func(t *testing.T) {
			want := fromFile
			tc.Set(&want)
			if diff := cmp.Diff(want, run(t, "--"+tc.Flag, tc.Value)); diff != "" {
				t.Errorf("--%s %q (-want +got):\n%s", tc.Flag, tc.Value, diff)
			}
		})
	}
}
