package main

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const module = "github.com/aicloud/gpusuite/"

// The hooks run at every job start: they link no simulator, no NVML (the
// hook-gpus beside them opens it when no agent answers), no SQL driver and
// no CLI library (binary size, init time), in either build; nor does the
// agent's protocol, which every user of the agent's sockets links.
func TestHookDeps(t *testing.T) {
	banned := []string{
		"github.com/aicloud/gpusuite/internal/sim",
		"github.com/aicloud/gpusuite/internal/gpu",
		"github.com/aicloud/gpusuite/internal/hookgpus",
		"github.com/aicloud/gpusuite/internal/agent",
		"github.com/NVIDIA/go-nvml",
		"github.com/urfave/cli",
		"github.com/russross/blackfriday",
		"github.com/mattn/go-sqlite3",
		"modernc.org/sqlite",
		"github.com/jackc/pgx",
	}
	for _, hook := range []string{"prolog", "epilog", "internal/agentproto"} {
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

// layers are the packages the node's programs are made of, lowest first.
// A package's code imports only packages of lower layers: none of its own
// layer (peers) and none above, so no arrow climbs back up. A package in
// no layer fails the test, so a new one is placed on purpose. Tests may
// reach a peer (the hooks' tests run hookgpus in process): they are not
// linked into the programs.
var layers = [][]string{
	// the wire contract, and helpers over the standard library alone
	{"internal/record", "internal/logging", "internal/boundcmd", "internal/spool", "internal/cli/buildinfo", "internal/cli/exitcode"},
	// what a node reads and ships: its config, Slurm's hand-over and host lists, the spool's way out
	{"internal/config", "internal/slurm", "internal/slurmstate", "internal/ship"},
	// the node's ways to others: the agent's sockets (both sides), NVML, HTTP
	{"internal/agentproto", "internal/gpu", "internal/webconfig"},
	// the programs' logic: peers that ask or answer through agentproto
	{"internal/hook", "internal/hookgpus", "internal/agent"},
	// the hooks' command line
	{"internal/cli/hookcli"},
	// the mains
	{"prolog", "epilog", "hook-gpus"},
}

// layerOf is the layer of the package rel (module-relative).
func layerOf(rel string) (int, bool) {
	for i, l := range layers {
		for _, p := range l {
			if p == rel {
				return i, true
			}
		}
	}
	return 0, false
}

// TestLayers: every package the node's programs link, from the hooks to
// the agent, imports only packages of a lower layer (go list -deps).
func TestLayers(t *testing.T) {
	var roots []string
	for _, l := range layers {
		for _, p := range l {
			roots = append(roots, module+p)
		}
	}
	cmd := exec.Command("go", append([]string{"list", "-deps", "-json=ImportPath,Imports"}, roots...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list (is every package in layers still there?): %v\n%s", err, stderr.String())
	}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			t.Fatalf("go list: %v", err)
		}
		rel, ours := strings.CutPrefix(p.ImportPath, module)
		if !ours {
			continue
		}
		at, ok := layerOf(rel)
		if !ok {
			t.Errorf("%s has no layer: place it in layers", rel)
			continue
		}
		for _, imp := range p.Imports {
			irel, ours := strings.CutPrefix(imp, module)
			if !ours {
				continue
			}
			if to, ok := layerOf(irel); ok && to >= at {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package imports only lower layers", rel, at, irel, to)
			}
		}
	}
}
