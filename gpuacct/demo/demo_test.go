package demo

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/demo"
)

// Every example in `gpuacct demo --help` is a command line the demo
// accepts; bad flags are refused with one clear line.
func TestCommandLines(t *testing.T) {
	cmd := Command(io.Discard)
	var examples [][]string
	_, ex, _ := strings.Cut(cmd.UsageText, "Examples:")
	for _, l := range strings.Split(ex, "\n") {
		l, _, _ = strings.Cut(l, "#")
		if f := strings.Fields(l); len(f) > 0 {
			if f[0] != "gpuacct" || f[1] != "demo" {
				t.Fatalf("example %q is not a gpuacct demo command", l)
			}
			examples = append(examples, f)
		}
	}
	if len(examples) < 3 {
		t.Fatalf("examples %v", examples)
	}
	run := func(args []string) (demo.PipelineOptions, error) {
		var got demo.PipelineOptions
		c := Command(io.Discard)
		c.Action = func(cc *cli.Context) error {
			o, err := options(cc)
			got = o
			return err
		}
		app := &cli.App{Name: "gpuacct", Commands: []*cli.Command{c}, Writer: io.Discard, ErrWriter: io.Discard,
			ExitErrHandler: func(*cli.Context, error) {}}
		return got, app.Run(args)
	}
	for _, ex := range examples {
		t.Run(strings.Join(ex[2:], " "), func(t *testing.T) {
			o, err := run(ex)
			if err != nil {
				t.Fatal(err)
			}
			if o.Nodes < 1 || o.Weeks < 1 || o.Interval < time.Second {
				t.Errorf("options %+v", o)
			}
		})
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--gpus", "65"}, "--nodes, --weeks and --jobs-per-day must be at least 1 and --gpus within 1..64"},
		{[]string{"--weeks", "0"}, "--nodes, --weeks and --jobs-per-day must be at least 1 and --gpus within 1..64"},
		{[]string{"--interval", "1500ms"}, "--interval 1.5s is not a whole number of seconds"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := run(append([]string{"gpuacct", "demo"}, tc.args...))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}
