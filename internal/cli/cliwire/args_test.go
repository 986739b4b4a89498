package cliwire

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"
)

// TestOptionsAnywhere: a command's options may follow its arguments, and
// "--" ends the options wherever it stands, on every line that goes
// through Run (Reorder), with no help from the command's action.
func TestOptionsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want string
		code int
		err  string
	}{
		{"options first", []string{"--until", "4h", "gpu01"}, "args=[gpu01] until=4h all=false tags=[]", 0, ""},
		{"options after", []string{"gpu01", "--until", "4h", "-a"}, "args=[gpu01] until=4h all=true tags=[]", 0, ""},
		{"both and alias", []string{"--tag", "x", "gpu01", "-u=3d", "--tag", "y"}, "args=[gpu01] until=3d all=false tags=[x y]", 0, ""},
		{"after --", []string{"gpu01", "--", "--until"}, "args=[gpu01 --until] until= all=false tags=[]", 0, ""},
		{"ends in --", []string{"gpu01", "-a", "--"}, "args=[gpu01] until= all=true tags=[]", 0, ""},
		{"-- first", []string{"--", "-a", "gpu01"}, "args=[-a gpu01] until= all=false tags=[]", 0, ""},
		{"unknown option", []string{"gpu01", "--untill", "4h"}, "", 2, "tool: unknown option --untill (see 'tool note add --help')\n"},
		{"missing value", []string{"gpu01", "--until"}, "", 2, "tool: option --until needs a value (see 'tool note add --help')\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			app := &cli.App{Name: "tool", Writer: &out, ErrWriter: &errb, Commands: []*cli.Command{{
				Name: "note",
				Subcommands: []*cli.Command{{
					Name: "add",
					Flags: []cli.Flag{
						&cli.StringFlag{Name: "until", Aliases: []string{"u"}},
						&cli.BoolFlag{Name: "all", Aliases: []string{"a"}},
						&cli.StringSliceFlag{Name: "tag"},
					},
					Action: func(c *cli.Context) error {
						tags := c.StringSlice("tag")
						if tags == nil {
							tags = []string{}
						}
						_, err := fmt.Fprintf(c.App.Writer, "args=%v until=%s all=%t tags=%v", c.Args().Slice(), c.String("until"), c.Bool("all"), tags)
						return err
					},
				}},
			}}}
			code := Run(app, append([]string{"tool", "note", "add"}, tc.args...))
			if code != tc.code {
				t.Errorf("exit %d, want %d (stderr %q)", code, tc.code, errb.String())
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if got := errb.String(); got != tc.err && !(tc.err == "" && got == "") {
				t.Errorf("stderr %q, want %q", got, tc.err)
			}
		})
	}
}

func TestSetStrings(t *testing.T) {
	var out, errb bytes.Buffer
	db, tz, teams := "file.db", "UTC", "file.toml"
	app := &cli.App{Name: "tool", Writer: &out, ErrWriter: &errb,
		Flags: []cli.Flag{&cli.StringFlag{Name: "db"}, &cli.StringFlag{Name: "tz", EnvVars: []string{"CLIWIRE_TEST_TZ"}}, &cli.StringFlag{Name: "teams", Value: "default"}},
		Action: func(c *cli.Context) error {
			SetStrings(c, map[string]*string{"db": &db, "tz": &tz, "teams": &teams})
			return nil
		}}
	t.Setenv("CLIWIRE_TEST_TZ", "Europe/Berlin")
	if code := Run(app, []string{"tool", "--db", "flag.db"}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if diff := cmp.Diff([]string{"flag.db", "Europe/Berlin", "file.toml"}, []string{db, tz, teams}); diff != "" {
		t.Errorf("flag > env > file > default (-want +got):\n%s", diff)
	}
}
