package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUsageExitCodes runs, through run (the binary's path), each command
// line a newcomer gets wrong: each is a usage error, exit 2, in one line
// that says what to fix. An option's value refused after the
// configuration is read names the option typed, not the configuration
// key; a value the file gave names the key.
func TestUsageExitCodes(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty.toml")
	writeFile(t, empty, "")
	fileInterval := filepath.Join(dir, "interval.toml")
	writeFile(t, fileInterval, "[ingest]\ninterval = \"0s\"\n")
	tests := []struct {
		name string
		cfg  string // the configuration file; empty.toml when ""
		args []string
		code int
		want string
	}{
		{"report with no kind", "", []string{"report"}, 2, "one of teams, users, accounts, partitions, nodes, models, tree, top, jobs, cluster"},
		{"report nosuch", "", []string{"report", "nosuch"}, 2, `unknown report "nosuch"`},
		{"report bad zone", "", []string{"report", "users", "--tz", "Mars/Olympus"}, 2, `--tz "Mars/Olympus" is not a time zone`},
		{"report stray argument", "", []string{"report", "teams", "x1"}, 2, `unexpected argument "x1"`},
		{"report jobs --sort nosuch", "", []string{"report", "jobs", "--sort", "nosuch"}, 2, `--sort "nosuch" is not start, alloc, eff or idle`},
		{"report top --by nosuch", "", []string{"report", "top", "--by", "nosuch"}, 2, `--by "nosuch" is not users or teams`},
		{"job without id", "", []string{"job"}, 2, "give one JOBID"},
		{"job abc", "", []string{"job", "abc"}, 2, `job "abc" is not a Slurm job id`},
		{"job 0", "", []string{"job", "0"}, 2, `job "0" is not a Slurm job id`},
		{"job 1_", "", []string{"job", "1_"}, 2, `array task "" is not a number`},
		{"export nothing", "", []string{"export"}, 2, "name what to export"},
		{"export nosuch", "", []string{"export", "nosuch"}, 2, `unknown export "nosuch"`},
		{"export xml", "", []string{"export", "jobs", "--format", "xml"}, 2, `--format "xml" is not csv or jsonl`},
		{"export --job abc", "", []string{"export", "samples", "--job", "abc"}, 2, `--job: job "abc" is not a Slurm job id`},
		{"export jobs --split-dir", "", []string{"export", "jobs", "--split-dir", "d"}, 2, "jobs span nodes; split gpus or samples"},
		{"plot without -o", "", []string{"plot", "1234"}, 2, "-o FILE.png or FILE.svg is required"},
		{"plot gif", "", []string{"plot", "1234", "-o", "x.gif"}, 2, "name it .png or .svg"},
		{"plot without job", "", []string{"plot", "-o", "x.png"}, 2, "give one JOBID, or --report"},
		{"plot bad job", "", []string{"plot", "x1", "-o", "x.png"}, 2, `job "x1" is not a Slurm job id`},
		{"ignore without ids", "", []string{"ignore", "--reason", "r"}, 2, "give at least one JOBID"},
		{"unignore without ids", "", []string{"unignore"}, 2, "give at least one JOBID"},
		{"ignore bad id", "", []string{"ignore", "abc", "--reason", "r"}, 2, `job "abc" is not a Slurm job id`},
		{"unignore bad id", "", []string{"unignore", "12x"}, 2, `job "12x" is not a Slurm job id`},
		{"ignore without reason", "", []string{"ignore", "5"}, 2, "--reason is required"},
		{"ignore --list xml", "", []string{"ignore", "--list", "--format", "xml"}, 2, `--format "xml" is not table, csv, tsv or json`},
		{"ignore --list with id", "", []string{"ignore", "--list", "5"}, 2, "takes no JOBID"},
		{"ingest --keep nope", "", []string{"ingest", "--keep", "nope"}, 2, `--keep: "nope" is not archive or delete`},
		{"serve --interval 0s", "", []string{"serve", "--interval", "0s"}, 2, "--interval: 0s is under 100ms"},
		{"agent --interval 100ms", "", []string{"agent", "--interval", "100ms"}, 2, "--interval: 100ms is below the 1s minimum"},
		// A value missing at the end of the line is not the argument before it.
		{"option without its value", "", []string{"status", "gpu01", "--live-dir"}, 2, "option --live-dir needs a value"},
		{"global option without its value", "", []string{"job", "5", "--config"}, 2, "option --config needs a value"},
		// The file's value: its key is named; the file, not the command
		// line, is what to fix.
		{"interval from the file", fileInterval, []string{"serve"}, 1, `key "ingest.interval"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := tt.cfg
			if cfg == "" {
				cfg = empty
			}
			t.Chdir(t.TempDir()) // a plot that ran would write here
			var out, errb bytes.Buffer
			getenv := func(k string) string {
				if k == "GPUSUITE_CONFIG" {
					return cfg
				}
				return ""
			}
			code := run(append([]string{"gpuacct"}, tt.args...), strings.NewReader(""), &out, &errb, getenv)
			msg := strings.TrimSpace(errb.String())
			if code != tt.code || !strings.Contains(msg, tt.want) {
				t.Errorf("gpuacct %s: exit %d, %q; want exit %d and %q", strings.Join(tt.args, " "), code, msg, tt.code, tt.want)
			}
			if strings.Contains(msg, "\n") {
				t.Errorf("gpuacct %s: the error is not one line: %q", strings.Join(tt.args, " "), msg)
			}
			if tt.code == 2 && strings.Contains(msg, `key "`) {
				t.Errorf("gpuacct %s: %q names a configuration key for an option typed", strings.Join(tt.args, " "), msg)
			}
		})
	}
}

// TestStrayArguments walks every command: one that takes no arguments
// refuses one (exit 2) before it reads anything (the configuration given
// is broken), where urfave/cli would hand it over unread (gpuacct serve x1
// served).
func TestStrayArguments(t *testing.T) {
	broken := filepath.Join(t.TempDir(), "broken.toml")
	if err := os.WriteFile(broken, []byte("[store\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	takesArgs := map[string]bool{"job": true, "plot": true, "export": true, "ignore": true, "unignore": true, "profile": true,
		"status": true, "note add": true, "note rm": true, "note list": true, "mailprog": true}
	seen := 0
	// The leaves, and the commands with subcommands that run something of
	// their own (report, the simulated build's demo).
	paths := leaves(helpApp().Commands, nil)
	for _, c := range helpApp().Commands {
		if len(c.Subcommands) > 0 && c.Action != nil && !c.SkipFlagParsing {
			paths = append(paths, []string{c.Name})
		}
	}
	for _, path := range paths {
		name := strings.Join(path, " ")
		if takesArgs[name] {
			seen++
			continue
		}
		t.Run(name, func(t *testing.T) {
			var out, errb bytes.Buffer
			getenv := func(k string) string {
				if k == "GPUSUITE_CONFIG" {
					return broken
				}
				return ""
			}
			code := run(append(append([]string{"gpuacct"}, path...), "x1"), strings.NewReader(""), &out, &errb, getenv)
			if msg := errb.String(); code != 2 || !strings.Contains(msg, `"x1"`) || strings.Count(strings.TrimSpace(msg), "\n") != 0 {
				t.Errorf("gpuacct %s x1: exit %d, %q; want exit 2 and one line naming the argument", name, code, msg)
			}
		})
	}
	if seen != len(takesArgs) {
		t.Errorf("%d of the %d commands that take arguments were seen: one was renamed", seen, len(takesArgs))
	}
}
