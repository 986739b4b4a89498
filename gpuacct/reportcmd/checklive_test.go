package reportcmd

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
)

// liveSnap is a snapshot of node sampled at `at` (10 s interval) with
// one GPU per entry of gpus.
func liveSnap(node string, at time.Time, gpus ...record.LiveGPU) record.Live {
	for i := range gpus {
		gpus[i].Index = i
		gpus[i].Model = "NVIDIA H100"
	}
	return record.Live{Schema: record.LiveSchema, Cluster: "c1", Node: node, Time: at, Interval: 10, GPUs: gpus}
}

func liveGPU(util uint32, job uint64, procs ...record.LiveProc) record.LiveGPU {
	g := record.LiveGPU{Util: &util, Procs: procs}
	if job != 0 {
		g.Jobs = []record.LiveJob{{Job: job, User: "alice", Account: "ml"}}
	}
	return g
}

// TestCheckLive: the live board's alerts are check's problems; a board
// not set up, Slurm unreachable and skipped files only warn.
func TestCheckLive(t *testing.T) {
	now := time.Unix(t0+3600, 0).UTC()
	path := buildLedger(t, []fxJob{{ID: 1, User: "a", Acct: "x", Part: "gpu", Node: "gpu01", GPUs: 1, Start: t0, End: t0 + 3500}}, now)
	st, err := openWriter(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.RecordPass(context.Background(), store.Pass{Started: now.Add(-120 * time.Second), Finished: now.Add(-119 * time.Second), OK: true}); err != nil {
		t.Fatal(err)
	}
	st.Close()
	fresh := now.Add(-5 * time.Second)
	idleSince := now.Add(-90 * time.Minute)
	idleGPU := liveGPU(0, 17)
	idleGPU.IdleSince = &idleSince
	okSlurm := func(nodes ...string) slurmReader {
		return func(context.Context, time.Duration) (slurmstate.State, error) {
			s := slurmstate.State{At: now}
			for _, n := range nodes {
				s.Nodes = append(s.Nodes, slurmstate.Node{Name: n, Condition: slurmstate.Mixed, Partitions: []string{"gpu"},
					GPUs: []slurmstate.GPU{{Type: "h100", Count: 2}}, GPUCount: 2})
			}
			return s, nil
		}
	}
	const ok = "OK: 1 nodes, 0 silent over 2h0m0s; last good ingest pass 1m59s ago; quarantine empty; last 24 h: 0 files quarantined, 0 refused; "
	tests := []struct {
		name  string
		lives []record.Live
		files map[string]string // other files in the live dir
		noDir bool
		slurm slurmReader
		args  []string
		// out is stdout; errOut the warnings on stderr
		out, errOut string
		fail        bool
	}{
		{
			name:  "clean",
			lives: []record.Live{liveSnap("gpu01", fresh, liveGPU(90, 17, record.LiveProc{PID: 10, User: "alice", Job: 17}), liveGPU(0, 0))},
			slurm: okSlurm("gpu01"),
			out:   ok + "live board: 1 nodes, 2 GPUs, 0 alerts\n",
		},
		{
			name: "foreign",
			lives: []record.Live{liveSnap("gpu01", fresh,
				liveGPU(90, 17, record.LiveProc{PID: 10, User: "alice", Job: 17}, record.LiveProc{PID: 4242, User: "bob", Foreign: true}),
				liveGPU(30, 0, record.LiveProc{PID: 5151, User: "carol"}))},
			slurm: okSlurm("gpu01"),
			out: "CRITICAL: live: gpu01 GPU 0: process 4242 of bob runs outside job 17 (alice)\n" +
				"CRITICAL: live: gpu01 GPU 1: process 5151 of carol runs on a GPU no job holds\n",
			fail: true,
		},
		{
			name:  "idle past board.idle_alert",
			lives: []record.Live{liveSnap("gpu01", fresh, idleGPU, liveGPU(0, 0))},
			slurm: okSlurm("gpu01"),
			out:   "CRITICAL: live: gpu01 GPU 0: allocated to job 17 (alice) but idle for 1h30m0s (since 2025-12-31T23:30:00Z)\n",
			fail:  true,
		},
		{
			name:  "idle within --idle-alert",
			lives: []record.Live{liveSnap("gpu01", fresh, idleGPU, liveGPU(0, 0))},
			slurm: okSlurm("gpu01"),
			args:  []string{"--idle-alert", "2h"},
			out:   ok + "live board: 1 nodes, 2 GPUs, 0 alerts\n",
		},
		{
			name:  "stale snapshot and a Slurm node without one",
			lives: []record.Live{liveSnap("gpu01", now.Add(-10*time.Minute), liveGPU(90, 17))},
			slurm: okSlurm("gpu01", "gpu02"),
			out: "CRITICAL: live: gpu01: stale: last live snapshot 10m0s ago (2026-01-01T00:50:00Z)\n" +
				"CRITICAL: live: gpu02: stale: no live snapshot (is its agent running, with agent.live_dir set?)\n",
			fail: true,
		},
		{
			name:  "stale but down or powered down in Slurm: a warning, not an alert",
			lives: []record.Live{liveSnap("gpu01", now.Add(-10*time.Minute), liveGPU(90, 17)), liveSnap("gpu02", now.Add(-10*time.Minute), liveGPU(0, 0))},
			slurm: func(context.Context, time.Duration) (slurmstate.State, error) {
				return slurmstate.State{At: now, Nodes: []slurmstate.Node{
					{Name: "gpu01", Condition: slurmstate.Down, GPUs: []slurmstate.GPU{{Type: "h100", Count: 1}}, GPUCount: 1},
					{Name: "gpu02", Condition: slurmstate.Idle, Flags: []string{"POWERED_DOWN"}, GPUs: []slurmstate.GPU{{Type: "h100", Count: 1}}, GPUCount: 1},
				}}, nil
			},
			out: ok + "live board: 2 nodes, 2 GPUs, 0 alerts\n",
			errOut: "WARNING: live: gpu01: stale: last live snapshot 10m0s ago (2026-01-01T00:50:00Z): Slurm has it down\n" +
				"WARNING: live: gpu02: stale: last live snapshot 10m0s ago (2026-01-01T00:50:00Z): Slurm has it powered down\n",
		},
		{
			name:   "a snapshot older than --forget: decommissioned? as a warning",
			lives:  []record.Live{liveSnap("gpu01", fresh, liveGPU(90, 17)), liveSnap("gpu09", now.Add(-200*time.Hour), liveGPU(0, 0))},
			slurm:  okSlurm("gpu01"),
			args:   []string{"--forget", "168h"},
			out:    ok + "live board: 2 nodes, 2 GPUs, 0 alerts\n",
			errOut: "WARNING: live: gpu09: stale: last live snapshot 200h0m0s ago (2025-12-23T17:00:00Z): silent longer than report.check_forget (168h0m0s): decommissioned? remove its snapshot from board.live_dir\n",
		},
		{
			name:  "Slurm unreachable and a file skipped",
			lives: []record.Live{liveSnap("gpu01", fresh, liveGPU(90, 17))},
			files: map[string]string{"gpu09.json": "not json"},
			slurm: func(context.Context, time.Duration) (slurmstate.State, error) {
				return slurmstate.State{}, errors.New("scontrol: timed out")
			},
			out:    ok + "live board: 1 nodes, 1 GPUs, 0 alerts\n",
			errOut: "WARNING: 1 live snapshot file(s) skipped, first gpu09.json: not a live snapshot: invalid character 'o' in literal null (expecting 'u')\nWARNING: Slurm unreachable (scontrol: timed out): nodes it knows without a snapshot are not checked\n",
		},
		{
			name:   "live board not set up",
			noDir:  true,
			slurm:  okSlurm("gpu01"),
			out:    ok + "live board not set up\n",
			errOut: "WARNING: live board not set up: \"LIVE\" does not exist (set board.live_dir or --live-dir to the agents' agent.live_dir, or --no-live)\n",
		},
		{
			name:  "--no-live",
			lives: []record.Live{liveSnap("gpu01", now.Add(-10*time.Minute), liveGPU(90, 17))},
			slurm: okSlurm("gpu01"),
			args:  []string{"--no-live"},
			out:   strings.TrimSuffix(ok, "; ") + "\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "live")
			if !tt.noDir {
				if err := os.Mkdir(dir, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, l := range tt.lives {
				data, err := json.Marshal(l)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, record.LiveFileName(l.Node)), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for name, body := range tt.files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			d, out, errb := testDeps(now, nil)
			err := runCheck(t, d, tt.slurm, append([]string{dbOpt(path), "--stale", "2h", "--lag", "10m", "--live-dir", dir}, tt.args...)...)
			if (err != nil) != tt.fail {
				t.Errorf("error %v, want failure %v", err, tt.fail)
			}
			if tt.fail && exitCode(err) != checkCritical {
				t.Errorf("error %v, want exit %d", err, checkCritical)
			}
			if d := cmp.Diff(tt.out, out.String()); d != "" {
				t.Errorf("stdout (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.errOut, strings.ReplaceAll(errb.String(), dir, "LIVE")); d != "" {
				t.Errorf("stderr (-want +got):\n%s", d)
			}
		})
	}
}

func TestCheckLiveBadIdleAlert(t *testing.T) {
	d, _, _ := testDeps(time.Unix(t0, 0), nil)
	never := func(context.Context, time.Duration) (slurmstate.State, error) {
		t.Error("Slurm read for a bad option")
		return slurmstate.State{}, nil
	}
	err := runCheck(t, d, never, "--db", filepath.Join(t.TempDir(), "none.db"), "--idle-alert", "-1m")
	if exitCode(err) != checkUnknown || !strings.Contains(err.Error(), "check: --idle-alert -1m0s is not a positive duration such as 1h") {
		t.Errorf("--idle-alert -1m: %v", err)
	}
}

// runCheck runs gpuacct check with Slurm read by slurm.
func runCheck(t *testing.T, d Deps, slurm slurmReader, args ...string) error {
	t.Helper()
	app := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()}, ExitErrHandler: func(*cli.Context, error) {},
		Writer: d.Stdout, ErrWriter: d.Stderr, Commands: []*cli.Command{checkCommand(d, slurm)}}
	return app.Run(append([]string{"gpuacct", "check"}, args...))
}
