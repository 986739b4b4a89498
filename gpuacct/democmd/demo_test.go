package democmd

import (
	"io"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/demo"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// Every example in `gpuacct demo --help` is a command line the demo
// accepts; bad flags are refused with one clear line.
func TestCommandLines(t *testing.T) {
	examples := examplesOf(t, Command(io.Discard, io.Discard, noEnv).UsageText, "gpuacct", "demo")
	run := func(args []string) (demo.PipelineOptions, error) {
		var got demo.PipelineOptions
		c := Command(io.Discard, io.Discard, noEnv)
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
		{[]string{"--start", "soon"}, "--start: time \"soon\" is not one of " + timespec.Formats},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			_, err := run(append([]string{"gpuacct", "demo"}, tc.args...))
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
}

// --start fixes the simulated weeks (UTC); without it they end now
// (the zero Start, which the demo takes as Weeks before its clock).
func TestStart(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want time.Time
	}{
		{nil, time.Time{}},
		{[]string{"--start", "2026-10-05"}, time.Date(2026, 10, 5, 0, 0, 0, 0, time.UTC)},
		{[]string{"--start", "2026-10-05T06:30"}, time.Date(2026, 10, 5, 6, 30, 0, 0, time.UTC)},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var got demo.PipelineOptions
			c := Command(io.Discard, io.Discard, noEnv)
			c.Action = func(cc *cli.Context) error {
				var err error
				got, err = options(cc)
				return err
			}
			app := &cli.App{Name: "gpuacct", Commands: []*cli.Command{c}, Writer: io.Discard, ErrWriter: io.Discard,
				ExitErrHandler: func(*cli.Context, error) {}}
			if err := app.Run(append([]string{"gpuacct", "demo"}, tc.args...)); err != nil {
				t.Fatal(err)
			}
			if !got.Start.Equal(tc.want) {
				t.Errorf("start %v, want %v", got.Start, tc.want)
			}
		})
	}
}

func noEnv(string) string { return "" }

// examplesOf returns the command lines of a help text's examples, each
// checked to start with prefix.
func examplesOf(t *testing.T, usage string, prefix ...string) [][]string {
	t.Helper()
	var examples [][]string
	_, ex, _ := strings.Cut(usage, "Examples:")
	for _, l := range strings.Split(ex, "\n") {
		l, _, _ = strings.Cut(l, "#")
		if f := strings.Fields(l); len(f) > 0 {
			if len(f) < len(prefix) || strings.Join(f[:len(prefix)], " ") != strings.Join(prefix, " ") {
				t.Fatalf("example %q is not a %s command", l, strings.Join(prefix, " "))
			}
			examples = append(examples, f)
		}
	}
	if len(examples) < 3 {
		t.Fatalf("examples %v", examples)
	}
	return examples
}

// Every example in `gpuacct demo serve --help` is accepted; a missing
// --dir, a stray argument, an address that is no HOST:PORT and a
// non-loopback address from the environment are refused with one line;
// a non-loopback --listen on the command line is taken as meant.
func TestServeCommandLines(t *testing.T) {
	run := func(env map[string]string, args []string) (demo.ServeOptions, error) {
		var got demo.ServeOptions
		getenv := func(k string) string { return env[k] }
		c := Command(io.Discard, io.Discard, getenv)
		c.Subcommands[0].Action = func(cc *cli.Context) error {
			o, err := serveOptions(cc, getenv)
			got = o
			return err
		}
		app := &cli.App{Name: "gpuacct", Commands: []*cli.Command{c}, Writer: io.Discard, ErrWriter: io.Discard,
			ExitErrHandler: func(*cli.Context, error) {}}
		return got, app.Run(args)
	}
	serve := Command(io.Discard, io.Discard, noEnv).Subcommands[0]
	for _, ex := range examplesOf(t, serve.UsageText, "gpuacct", "demo", "serve") {
		t.Run(strings.Join(ex[3:], " "), func(t *testing.T) {
			o, err := run(nil, ex)
			if err != nil {
				t.Fatal(err)
			}
			if o.Dir != "/tmp/gpusuite-demo" || o.Listen == "" {
				t.Errorf("options %+v", o)
			}
		})
	}
	for _, tc := range []struct {
		name       string
		env        map[string]string
		args       []string
		wantListen string
		wantErr    string
	}{
		{"default", nil, []string{"--dir", "d"}, "127.0.0.1:8080", ""},
		{"env loopback", map[string]string{listenEnv: "[::1]:9000"}, []string{"--dir", "d"}, "[::1]:9000", ""},
		{"env localhost", map[string]string{listenEnv: "localhost:9000"}, []string{"--dir", "d"}, "localhost:9000", ""},
		{"flag beats env", map[string]string{listenEnv: "0.0.0.0:1"}, []string{"--dir", "d", "--listen", "127.0.0.2:9"}, "127.0.0.2:9", ""},
		{"explicit non-loopback", nil, []string{"--dir", "d", "--listen", ":8080"}, ":8080", ""},
		{"env non-loopback", map[string]string{listenEnv: "0.0.0.0:8080"}, []string{"--dir", "d"}, "",
			"demo serve: GPUSUITE_DEMO_LISTEN=0.0.0.0:8080 would serve the demo beyond this machine; give --listen 0.0.0.0:8080 on the command line to mean it"},
		{"env all interfaces", map[string]string{listenEnv: ":8080"}, []string{"--dir", "d"}, "", "would serve the demo beyond this machine"},
		{"no dir", nil, nil, "", "demo serve: --dir is required: the directory gpuacct demo printed (run gpuacct demo --dir DIR to make one)"},
		{"stray argument", nil, []string{"--dir", "d", "extra"}, "", "demo serve: unexpected argument \"extra\": give the directory as --dir DIR"},
		{"no port", nil, []string{"--dir", "d", "--listen", "127.0.0.1"}, "", "demo serve: --listen \"127.0.0.1\" is not HOST:PORT, as 127.0.0.1:8080"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := run(tc.env, append([]string{"gpuacct", "demo", "serve"}, tc.args...))
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want %q", err, tc.wantErr)
			case tc.wantErr == "" && o.Listen != tc.wantListen:
				t.Errorf("listen %q, want %q", o.Listen, tc.wantListen)
			}
		})
	}
}
