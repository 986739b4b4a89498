package cliwire

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

// TestFlagError: a configuration error about a key a set option gave
// names the option (and its environment variable when that is set), as
// a usage error; the same error with the option unset stays the key's.
func TestFlagError(t *testing.T) {
	keyErr := errors.New(`key "ingest.interval": 0s is under 100ms`)
	tests := []struct {
		name     string
		args     []string
		env      string // GPUSUITE_TEST_INTERVAL's value
		err      error
		wantCode int
		wantErr  string
	}{
		{"option typed", []string{"--interval", "0s"}, "", keyErr, 2, "tool: --interval: 0s is under 100ms (see 'tool serve --help')\n"},
		{"option from the environment", nil, "0s", keyErr, 2, "tool: --interval or $GPUSUITE_TEST_INTERVAL: 0s is under 100ms (see 'tool serve --help')\n"},
		{"value from the file", nil, "", keyErr, 1, "tool: key \"ingest.interval\": 0s is under 100ms\n"},
		{"another key", []string{"--interval", "0s"}, "", errors.New(`key "store.path": must not be empty`), 1, "tool: key \"store.path\": must not be empty\n"},
		{"not a key's", []string{"--interval", "0s"}, "", errors.New("open NVML: no driver"), 1, "tool: open NVML: no driver\n"},
		{"stray argument", []string{"x1"}, "", nil, 2, "tool: unexpected argument \"x1\": tool serve takes none (see 'tool serve --help')\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GPUSUITE_TEST_INTERVAL", tt.env)
			var out, errb bytes.Buffer
			app := &cli.App{Name: "tool", Writer: &out, ErrWriter: &errb, Commands: []*cli.Command{{
				Name:  "serve",
				Flags: []cli.Flag{&cli.DurationFlag{Name: "interval", Usage: "longest time between passes (ingest.interval)", EnvVars: []string{"GPUSUITE_TEST_INTERVAL"}}},
				Action: NoArgs(func(c *cli.Context) error {
					return FlagError(c, tt.err)
				}),
			}}}
			code := Run(app, append([]string{"tool", "serve"}, tt.args...))
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d", code, tt.wantCode)
			}
			if diff := cmp.Diff(tt.wantErr, errb.String()); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}
