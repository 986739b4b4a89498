package config

import "github.com/urfave/cli/v2"

// Flag is the --config flag every command carries.
func Flag() *cli.StringFlag {
	return &cli.StringFlag{
		Name:    "config",
		Usage:   "TOML config file (default " + DefaultPath + ")",
		EnvVars: []string{EnvPath},
	}
}

// FromCLI loads the file named by --config / $GPUSUITE_CONFIG (or the
// default path, which may be absent). Commands then apply their own flags
// where c.IsSet, giving flag > env > file > default.
func FromCLI(c *cli.Context, getenv func(string) string) (Config, error) {
	path, explicit := Path(c.String("config"), getenv)
	return Load(path, explicit)
}
