package main

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
	"github.com/aicloud/gpusuite/internal/testkit/files"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
)

// helpApp is nfs-sync's command tree as Main runs it.
func helpApp() *cli.App {
	return newApp(io.Discard, io.Discard, func(string) string { return "" })
}

func TestHelpDefaultsAreTheConfigs(t *testing.T) { cmdline.CheckDefaults(t, helpApp()) }

func TestHelpNamesTheProgramOnce(t *testing.T) { cmdline.CheckNoDoubledName(t, helpApp()) }

// examples are what each example must do: print want (stdout and the
// log), and, for watch, fix a file written below the directory it
// watches.
var examples = map[string]string{
	"nfs-sync touch results.csv            # after updating it from this server":     "touched results.csv",
	"nfs-sync run -- python train.py       # run, then fix what it wrote in .":       "fixed",
	"nfs-sync watch                        # the daemon (systemd: nfs-sync.service)": "fixed",
	"nfs-sync --config /etc/gpusuite/gpusuite.toml watch --dry-run /data/home":       "would touch",
	"nfs-sync touch results.csv model.ckpt":                                          "touched model.ckpt",
	"nfs-sync touch --dry-run *.log":                                                 "would touch b.log",
	"nfs-sync run -- python train.py --epochs 3":                                     "fixed",
	"nfs-sync run --dir /data/shared/results -- ./postprocess.sh":                    "fixed",
	"nfs-sync watch                                  # nfssync.dirs, default /data":  "fixed",
	"nfs-sync --log-level debug watch --dry-run /data/home/alice":                    "would touch",
	"nfs-sync watch --backend inotify --metrics-listen 127.0.0.1:9465":               "fixed",
	"touch /data/.nfs-sync-probe && nfs-sync calibrate /data/.nfs-sync-probe":        "window: ",
}

// TestHelpExamplesRun runs every example of nfs-sync's --help as printed,
// in a directory of its own that is also the working directory: /data
// there stands for the share (and is nfssync.dirs), the configuration
// (GPUSUITE_CONFIG, and the one --config names) sets a short window and
// inotify and logs at debug level (a fix is logged), python and
// ./postprocess.sh write a file where they run, and *.log is expanded as
// a shell would. A watch runs until it logs that it watches, then until a
// file written below its directories is fixed (or would be), and is
// stopped: it must exit 0.
func TestHelpExamplesRun(t *testing.T) {
	bin := t.TempDir()
	files.Write(t, filepath.Join(bin, "python"), "#!/bin/sh\necho trained > model.out\n")
	if err := os.Chmod(filepath.Join(bin, "python"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	cmdline.CheckExamples(t, helpApp, nil, func(t *testing.T, ex cmdline.Example, args []string) {
		want, ok := examples[ex.Line]
		if !ok {
			t.Fatalf("%s: example %q: say in examples what it prints", ex.Command, ex.Line)
		}
		dir := t.TempDir()
		t.Chdir(dir)
		data := filepath.Join(dir, "data")
		for _, d := range []string{"home/alice", "shared/results"} {
			if err := os.MkdirAll(filepath.Join(data, d), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cfg := filepath.Join(dir, "gpusuite.toml")
		files.Write(t, cfg, "[nfssync]\nbackend = \"inotify\"\nwindow = \"50ms\"\nsettle = \"10ms\"\nmetrics_listen = \"\"\nlog_level = \"debug\"\ndirs = [\""+data+"\"]\n")
		old := time.Now().Add(-time.Hour)
		for _, f := range []string{"results.csv", "model.ckpt", "a.log", "b.log", filepath.Join(data, ".nfs-sync-probe")} {
			files.Write(t, f, "x")
			if err := os.Chtimes(f, old, old); err != nil {
				t.Fatal(err)
			}
		}
		files.Write(t, "postprocess.sh", "#!/bin/sh\necho done > "+filepath.Join(data, "shared/results/summary.txt")+"\n")
		if err := os.Chmod("postprocess.sh", 0o755); err != nil {
			t.Fatal(err)
		}
		var expanded []string
		for i, a := range args {
			a = strings.NewReplacer("/etc/gpusuite/gpusuite.toml", cfg, "/data", data).Replace(a)
			if i > 0 && args[i-1] == "--metrics-listen" {
				a = "127.0.0.1:0"
			}
			if m, _ := filepath.Glob(a); strings.Contains(a, "*") && len(m) > 0 {
				expanded = append(expanded, m...)
				continue
			}
			expanded = append(expanded, a)
		}
		env := envFunc(map[string]string{"GPUSUITE_CONFIG": cfg})
		if slices.Contains(args, "watch") {
			watchExample(t, expanded, env, data, want)
			return
		}
		var out logs.Buffer
		if code := Main(expanded, &out, &out, env); code != 0 {
			t.Fatalf("%s: example %q exits %d: %s", ex.Command, ex.Line, code, out.String())
		}
		if !strings.Contains(out.String(), want) {
			t.Errorf("%s: example %q: output lacks %q:\n%s", ex.Command, ex.Line, want, out.String())
		}
	})
}

// watchExample runs a watch example until it watches, writes a file
// below data/home/alice (below every directory the examples watch), waits
// until the log says want of it, then stops the watch.
func watchExample(t *testing.T, args []string, env func(string) string, data, want string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var log logs.Buffer
	done := make(chan int, 1)
	go func() { done <- MainContext(ctx, args, &log, &log, env) }()
	f := filepath.Join(data, "home", "alice", "out.txt")
	waitFor(t, settled, "the watch never said it watches", func() bool {
		select {
		case code := <-done:
			t.Fatalf("watch ended (exit %d) before watching: %s", code, log.String())
		default:
		}
		return strings.Contains(log.String(), "msg=watching")
	})
	// The watch says it watches once its watches are set: the write
	// after is seen.
	files.Write(t, f, "x")
	waitFor(t, settled, "no "+want+" of "+f+" logged", func() bool {
		return strings.Contains(log.String(), want) && strings.Contains(log.String(), f)
	})
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("watch exits %d once stopped: %s", code, log.String())
		}
	case <-time.After(settled):
		t.Fatalf("watch still running %s after it was stopped", settled)
	}
}
