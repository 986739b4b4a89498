package notifycmd

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
)

// TestUserMe: --user me is the real uid's user, for whoever asks; a uid
// without a name is refused with one line.
func TestUserMe(t *testing.T) {
	f := newFixture(t, "")
	if code, out, errs := f.run(t, 0, "root", "--once"); code != 0 {
		t.Fatalf("--once: exit %d, %q %s", code, out, errs)
	}
	run := func(euid int, name string, lookup func(int) (string, error), args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		d := Deps{Stdout: &out, Stderr: &errb, Now: func() time.Time { return now },
			Getenv: func(k string) string {
				if k == "GPUSUITE_CONFIG" {
					return f.cfg
				}
				return ""
			},
			Caller: func() (int, string) { return euid, name }, LookupUser: lookup,
		}
		app := &cli.App{Name: "gpuacct", Writer: &out, ErrWriter: &errb, Flags: []cli.Flag{cliwire.ConfigFlag()}, Commands: []*cli.Command{Command(d)}}
		cliwire.Prepare(app)
		err := app.Run(cliwire.Reorder(app, append([]string{"gpuacct", "notify"}, args...)))
		return cliwire.Finish("gpuacct", &errb, err), out.String(), errb.String()
	}
	named := func(n string) func(int) (string, error) { return func(int) (string, error) { return n, nil } }
	for _, tc := range []struct {
		name      string
		euid      int
		user      string
		lookup    func(int) (string, error)
		code      int
		wantLines int
		want      string
	}{
		{"alice, her own", 1000, "alice", named("alice"), 0, 2, ",sent,"},
		{"root, as bob", 0, "root", named("bob"), 0, 1, "id,created"},
		{"root, as alice", 0, "root", named("alice"), 0, 2, ",sent,"},
		{"no name", 1000, "alice", func(int) (string, error) { return "", errors.New("unknown userid 1000") }, 1, 0, "unknown userid 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(tc.euid, tc.user, tc.lookup, "list", "--user", "me", "--format", "csv")
			if code != tc.code || strings.Count(out, "\n") != tc.wantLines || !strings.Contains(out+errs, tc.want) || strings.Count(errs, "\n") > 1 {
				t.Errorf("exit %d, stdout %q, stderr %q; want exit %d, %d lines, %q", code, out, errs, tc.code, tc.wantLines, tc.want)
			}
		})
	}
}
