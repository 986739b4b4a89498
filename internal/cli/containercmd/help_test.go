package containercmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/container"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

// helpApps are sbuild's and srun-wrap's command lines as they run.
func helpApps(t *testing.T) map[string]*cli.App {
	f := newFake(t, t.TempDir(), nil)
	var extra []string
	var split container.Split
	return map[string]*cli.App{"sbuild": sbuildApp(f.sys, &extra), "srun-wrap": srunWrapApp(f.sys, &split)}
}

func TestHelpDefaultsAreTheConfigs(t *testing.T) {
	for name, app := range helpApps(t) {
		t.Run(name, func(t *testing.T) { cmdline.CheckDefaults(t, app) })
	}
}

func TestHelpNamesTheProgramOnce(t *testing.T) {
	for name, app := range helpApps(t) {
		t.Run(name, func(t *testing.T) { cmdline.CheckNoDoubledName(t, app) })
	}
}

// TestHelpExamplesRun runs every example of sbuild's and srun-wrap's --help
// as printed, in a project directory holding the files they name, against
// a Slurm and enroot that record what they are asked and succeed: each
// must exit 0 (srun-wrap having handed over to srun).
func TestHelpExamplesRun(t *testing.T) {
	mains := map[string]func([]string, container.Sys) int{"sbuild": Sbuild, "srun-wrap": SrunWrap}
	for name, app := range helpApps(t) {
		for _, ex := range cmdline.Examples(app) {
			t.Run(ex.Line, func(t *testing.T) {
				args, ok := cmdline.Args(name, ex.Line)
				if !ok {
					t.Fatalf("%s: example %q does not run %s", ex.Command, ex.Line, name)
				}
				proj := filepath.Join(t.TempDir(), "myproj")
				data := t.TempDir()
				for _, d := range []string{proj, filepath.Join(data, "pyxis_myproj"), filepath.Join(data, "pyxis_old1"), filepath.Join(data, "pyxis_old2")} {
					if err := os.MkdirAll(d, 0o755); err != nil {
						t.Fatal(err)
					}
				}
				for _, file := range []string{"setup.sh", "train.py", "train.sh"} {
					if err := os.WriteFile(filepath.Join(proj, file), []byte("#!/bin/sh\n"), 0o755); err != nil {
						t.Fatal(err)
					}
				}
				f := newFake(t, proj, map[string]string{"ENROOT_DATA_PATH": data})
				f.tty = true // a user at a terminal: srun-wrap's shell, sbuild rm's question
				home, _ := f.sys.User()
				creds := filepath.Join(home.Home, ".config", "enroot", ".credentials")
				if err := os.MkdirAll(filepath.Dir(creds), 0o700); err != nil {
					t.Fatal(err)
				}
				for file, text := range map[string]string{
					filepath.Join(home.Home, "ngc-key.txt"): "nvapi-KEY\n",
					creds:                                   "machine nvcr.io login $oauthtoken password K\nmachine authn.nvidia.com login $oauthtoken password K\n",
				} {
					if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
						t.Fatal(err)
					}
				}
				for i, a := range args {
					args[i] = strings.NewReplacer("$HOME", home.Home, "~", home.Home).Replace(a)
				}
				if name == "sbuild" && (len(args) == 1 || args[1] != "rm") {
					// A build makes a new container: no old one in the way.
					os.RemoveAll(filepath.Join(data, "pyxis_myproj"))
				}
				f.sys.Environ = func() []string { return []string{"PATH=/usr/bin", "WANDB_API_KEY=k"} }
				f.sys.Stdin = strings.NewReader("y\n")
				if code := mains[name](args, f.sys); code != 0 {
					t.Errorf("%s: example %q exits %d: %s", ex.Command, ex.Line, code, f.err.String())
				}
			})
		}
	}
}
