package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// leaves are the commands of app that run something, each as the words
// that name it.
func leaves(cmds []*cli.Command, parent []string) [][]string {
	var out [][]string
	for _, c := range cmds {
		path := append(append([]string(nil), parent...), c.Name)
		if len(c.Subcommands) > 0 {
			out = append(out, leaves(c.Subcommands, path)...)
			continue
		}
		if !c.SkipFlagParsing {
			out = append(out, path)
		}
	}
	return out
}

// TestFlagsAnywhere walks every command with options after an argument:
// an unknown one is refused as an option (exit 2), --help shows the
// command's help, and the global --config typed after the command is the
// file read, whatever the command.
func TestFlagsAnywhere(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "broken.toml")
	if err := os.WriteFile(bad, []byte("[store\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// readers load the config first thing: a broken one is their error.
	readers := map[string]bool{"status": true, "free": true, "report teams": true, "report users": true, "note list": true, "check": true}
	seenReaders := 0
	for _, path := range leaves(helpApp().Commands, nil) {
		name := strings.Join(path, " ")
		t.Run(name, func(t *testing.T) {
			var errb bytes.Buffer
			code, _ := runGpuacct(&errb, append(path, "x1", "--bogus-option")...)
			if code != 2 || !strings.Contains(errb.String(), "unknown option --bogus-option") {
				t.Errorf("gpuacct %s x1 --bogus-option: exit %d, %q; want 2 and unknown option", name, code, errb.String())
			}
			errb.Reset()
			code, out := runGpuacct(&errb, append(path, "x1", "--help")...)
			if code != 0 || !strings.Contains(out, "gpuacct "+name) {
				t.Errorf("gpuacct %s x1 --help: exit %d, stdout %.200q, stderr %q; want its help", name, code, out, errb.String())
			}
			if !readers[name] {
				return
			}
			seenReaders++
			errb.Reset()
			code, _ = runGpuacct(&errb, append(path, "--config", bad)...)
			if code == 0 || !strings.Contains(errb.String(), bad) {
				t.Errorf("gpuacct %s --config %s: exit %d, %q; want the broken file named", name, bad, code, errb.String())
			}
		})
	}
	if seenReaders != len(readers) {
		t.Errorf("%d of the %d readers were walked: a command was renamed", seenReaders, len(readers))
	}
}

// runGpuacct runs gpuacct's main path (run) with no environment.
func runGpuacct(stderr *bytes.Buffer, args ...string) (int, string) {
	var out bytes.Buffer
	code := run(append([]string{"gpuacct"}, args...), strings.NewReader(""), &out, stderr, func(string) string { return "" })
	return code, out.String()
}
