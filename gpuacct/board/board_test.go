package board

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/cliwire"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

var now = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }

func gpu(i int, model string, util uint32, used uint64, jobs ...record.LiveJob) record.LiveGPU {
	return record.LiveGPU{Index: i, UUID: "GPU-" + model + "-" + string(rune('a'+i)), Model: model, Util: u32(util),
		MemUsedMiB: u64(used), MemTotalMiB: u64(81559), Jobs: jobs}
}

// fixture writes the live directory: n1 busy, idle and free GPUs; n2 free
// in a reservation; n3 stale; n5 a foreign process. n4 (drained) has no
// snapshot.
func fixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	fresh := now.Add(-5 * time.Second)
	n1 := record.Live{Node: "n1", Time: fresh, GPUs: []record.LiveGPU{
		gpu(0, "NVIDIA H100", 0, 0), gpu(1, "NVIDIA H100", 0, 0),
		gpu(2, "NVIDIA H100", 0, 512, record.LiveJob{Job: 7, User: "alice", Account: "ml"}),
		gpu(3, "NVIDIA H100", 93, 40960, record.LiveJob{Job: 8, Restart: 1, User: "bob", Account: "vision"}),
	}}
	n1.GPUs[3].Procs = []record.LiveProc{{PID: 4242, User: "bob", Job: 8, MemUsedMiB: 40900}}
	n2 := record.Live{Node: "n2", Time: fresh, GPUs: []record.LiveGPU{gpu(0, "NVIDIA A100", 0, 0)}}
	n3 := record.Live{Node: "n3", Time: now.Add(-10 * time.Minute), GPUs: []record.LiveGPU{gpu(0, "NVIDIA H100", 0, 0)}}
	n5 := record.Live{Node: "n5", Time: fresh, GPUs: []record.LiveGPU{gpu(0, "NVIDIA H100", 55, 2048)}}
	n5.GPUs[0].Procs = []record.LiveProc{{PID: 999, User: "mallory", MemUsedMiB: 2000}}
	for _, l := range []record.Live{n1, n2, n3, n5} {
		l.Schema, l.Cluster, l.Interval = record.LiveSchema, "c1", 10
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, record.LiveFileName(l.Node)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func slurmFixture() slurmstate.State {
	node := func(name string, cond slurmstate.Condition, n int, parts ...string) slurmstate.Node {
		return slurmstate.Node{Name: name, Condition: cond, Partitions: parts, GPUs: []slurmstate.GPU{{Type: "h100", Count: n}}, GPUCount: n}
	}
	n4 := node("n4", slurmstate.Drained, 2, "gpu")
	n4.Reason = "xid 79 on gpu 1"
	return slurmstate.State{At: now, Nodes: []slurmstate.Node{
		node("n1", slurmstate.Mixed, 4, "gpu", "long"), node("n2", slurmstate.Idle, 1, "gpu"),
		node("n3", slurmstate.Idle, 1, "gpu"), n4, node("n5", slurmstate.Mixed, 1, "gpu"),
	}, Reservations: []slurmstate.Reservation{{Name: "vision-demo", Start: now.Add(-time.Hour), End: now.Add(time.Hour), Nodes: []string{"n2"}}}}
}

// runCmd runs gpuacct with the board commands and returns exit code,
// stdout and stderr.
func runCmd(t *testing.T, slurmErr error, args ...string) (int, string, string) {
	t.Helper()
	cfg := filepath.Join(t.TempDir(), "gpusuite.toml")
	if err := os.WriteFile(cfg, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	d := Deps{Stdout: &out, Stderr: &errb, Now: func() time.Time { return now }, Loc: time.UTC,
		Getenv: func(k string) string {
			if k == "GPUSUITE_CONFIG" {
				return cfg
			}
			return ""
		},
		Slurm: func(context.Context, time.Duration) (slurmstate.State, error) {
			if slurmErr != nil {
				return slurmstate.State{}, slurmErr
			}
			return slurmFixture(), nil
		}}
	app := &cli.App{Name: "gpuacct", Writer: &out, ErrWriter: &errb, Flags: []cli.Flag{cliwire.ConfigFlag()},
		Commands: []*cli.Command{FreeCommand(d), StatusCommand(d)}}
	cliwire.Prepare(app)
	err := app.Run(append([]string{"gpuacct"}, args...))
	code := cliwire.Finish("gpuacct", &errb, err)
	return code, out.String(), errb.String()
}

func TestGolden(t *testing.T) {
	unreachable := errors.New("read slurm nodes: scontrol show node --oneliner: slurm_load_node error: Unable to contact slurm controller (connect failure): exit status 1")
	tests := []struct {
		name     string
		slurmErr error
		args     []string
		// foreign adds n6.json holding n1's snapshot: skipped, and said.
		foreign bool
	}{
		{"free", nil, []string{"free"}, false},
		{"free_json", nil, []string{"free", "--format", "json"}, false},
		{"free_slurm_unreachable", unreachable, []string{"free"}, false},
		{"free_no_slurm", nil, []string{"free", "--no-slurm"}, false},
		{"status", nil, []string{"status"}, false},
		{"status_nodes", nil, []string{"status", "n5", "n1"}, false},
		{"status_json", nil, []string{"status", "--format", "json", "n4"}, false},
		{"status_slurm_unreachable", unreachable, []string{"status"}, false},
		{"status_skipped_file", nil, []string{"status", "n1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := fixture(t)
			if tt.foreign {
				data, err := os.ReadFile(filepath.Join(dir, "n1.json"))
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, "n6.json"), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// Flags go before the node names: urfave/cli stops at the first argument.
			args := append([]string{tt.args[0], "--live-dir", dir}, tt.args[1:]...)
			code, out, errs := runCmd(t, tt.slurmErr, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			golden := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(out), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBadInput(t *testing.T) {
	dir := fixture(t)
	tests := []struct {
		name    string
		args    []string
		code    int
		wantErr string
	}{
		{"unknown node", []string{"status", "--live-dir", dir, "n1", "n9"}, 2, `gpuacct: status: node "n9" is not on the board`},
		{"bad format", []string{"free", "--live-dir", dir, "--format", "xml"}, 2, `gpuacct: free: --format "xml" is not table or json`},
		{"argument to free", []string{"free", "--live-dir", dir, "n1"}, 2, `unexpected argument "n1"`},
		{"bad timeout", []string{"free", "--live-dir", dir, "--slurm-timeout", "1h"}, 2, "--slurm-timeout 1h0m0s is outside"},
		{"nothing to show", []string{"free", "--no-slurm", "--live-dir", filepath.Join(dir, "absent")}, 1, "free: nothing to show: open live directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errs := runCmd(t, nil, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d; stderr %q", code, tt.code, errs)
			}
			if !strings.Contains(errs, tt.wantErr) || strings.Count(strings.TrimSpace(errs), "\n") != 0 {
				t.Errorf("stderr %q, want one line with %q", errs, tt.wantErr)
			}
			if out != "" {
				t.Errorf("stdout %q on bad input", out)
			}
		})
	}
}
