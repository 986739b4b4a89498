package cliwire

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func newApp(out, errb *bytes.Buffer, actionErr error) *cli.App {
	return &cli.App{
		Name:      "tool",
		Writer:    out,
		ErrWriter: errb,
		Flags:     []cli.Flag{ConfigFlag()},
		Commands: []*cli.Command{{
			Name:        "sub",
			Subcommands: []*cli.Command{{Name: "leaf", Action: func(*cli.Context) error { return actionErr }}},
			Action:      func(*cli.Context) error { return actionErr },
		}},
	}
}

func TestRun(t *testing.T) {
	tests := []struct {
		name      string
		args      []string
		actionErr error
		wantCode  int
		wantErr   string
		wantOut   string
	}{
		{"unknown global option", []string{"--bogus"}, nil, 2, "tool: unknown option --bogus (see 'tool --help')\n", ""},
		{"unknown short option", []string{"-x"}, nil, 2, "tool: unknown option -x (see 'tool --help')\n", ""},
		{"unknown option on a subcommand", []string{"sub", "leaf", "--bogus"}, nil, 2, "tool: unknown option --bogus (see 'tool sub leaf --help')\n", ""},
		{"option without its value", []string{"--config"}, nil, 2, "tool: option --config needs a value (see 'tool --help')\n", ""},
		{"usage error from an action", []string{"sub"}, Usagef("bad --start"), 2, "tool: bad --start\n", ""},
		{"failure", []string{"sub"}, errors.New("open store: locked"), 1, "tool: open store: locked\n", ""},
		{"exit code already printed", []string{"sub"}, &ExitError{Code: 3}, 3, "", ""},
		{"success", []string{"sub"}, nil, 0, "", ""},
		{"version", []string{"--version"}, nil, 0, "", "tool, version "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := Run(newApp(&out, &errb, tt.actionErr), append([]string{"tool"}, tt.args...))
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d (stderr %q)", code, tt.wantCode, errb.String())
			}
			if errb.String() != tt.wantErr {
				t.Errorf("stderr %q, want %q", errb.String(), tt.wantErr)
			}
			if !strings.HasPrefix(out.String(), tt.wantOut) {
				t.Errorf("stdout %q, want prefix %q", out.String(), tt.wantOut)
			}
		})
	}
}
