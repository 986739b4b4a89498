package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The hooks run at every job start: they link no simulator, no NVML (the
// hook-gpus beside them opens it when no agent answers) and no CLI library
// (binary size, init time), in either build.
func TestHookDeps(t *testing.T) {
	banned := []string{
		"github.com/aicloud/gpusuite/internal/sim",
		"github.com/aicloud/gpusuite/internal/gpu",
		"github.com/aicloud/gpusuite/internal/hookgpu",
		"github.com/NVIDIA/go-nvml",
		"github.com/urfave/cli",
		"github.com/russross/blackfriday",
	}
	for _, hook := range []string{"prolog", "epilog"} {
		for _, tags := range []string{"", "simulated"} {
			t.Run(hook+"/"+tags, func(t *testing.T) {
				out, err := exec.Command("go", "list", "-tags", tags, "-deps", "github.com/aicloud/gpusuite/"+hook).CombinedOutput()
				if err != nil {
					t.Fatalf("go list: %v\n%s", err, out)
				}
				var linked []string
				for _, dep := range strings.Fields(string(out)) {
					for _, b := range banned {
						if dep == b || strings.HasPrefix(dep, b+"/") {
							linked = append(linked, dep)
						}
					}
				}
				if len(linked) > 0 {
					t.Errorf("tags %q: links %v", tags, linked)
				}
			})
		}
	}
}

// The hooks build without cgo into static executables: no program
// interpreter (dynamic loader) runs before their main.
func TestHooksStatic(t *testing.T) {
	dir := t.TempDir()
	for _, hook := range []string{"prolog", "epilog"} {
		bin := filepath.Join(dir, hook)
		cmd := exec.Command("go", "build", "-o", bin, "github.com/aicloud/gpusuite/"+hook)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("CGO_ENABLED=0 go build %s: %v\n%s", hook, err, out)
		}
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Errorf("%s has a program interpreter: it is dynamically linked", hook)
			}
		}
		f.Close()
	}
}
