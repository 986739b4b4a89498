package agent

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// On the real single-node Slurm of the harness: an agent on simulated GPUs
// like the node's, with its hook socket where the harness's prolog and
// epilog look for it (agent.sock in their spool), receives a job's
// announcements; the job's samples and aggregates arrive in incoming/<node>/
// attributed to the right job, user and account, on the GPUs the prolog
// recorded. The agent gets a spool of its own so that it does not ship the
// harness's events away from the other packages' tests.
func TestSlurmJobArrivesAttributed(t *testing.T) {
	c := slurm.Get(t)
	hookCfg, err := config.Load(c.Path("GPUSUITE_SLURM_HOOK_CONFIG"), true)
	if err != nil {
		t.Fatal(err)
	}
	node := c.Path("GPUSUITE_SLURM_NODE")
	harnessSpool := c.Path("GPUSUITE_SLURM_SPOOL")
	sock := hookCfg.Agent.SocketPath(harnessSpool)

	// one such agent at a time on this harness
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "gpusuite-agent-slurm-test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}

	bin := agentBinary(t)
	root := t.TempDir()
	for _, d := range []string{"incoming", "proc"} {
		os.MkdirAll(filepath.Join(root, d), 0o755)
	}
	minors := make([]string, len(hookCfg.GPU.Simulated.Minors))
	for i, m := range hookCfg.GPU.Simulated.Minors {
		minors[i] = strconv.Itoa(m)
	}
	cfgText := fmt.Sprintf(`[cluster]
name = %q
node = %q

[spool]
dir = "%[3]s/spool"

[gpu]
backend = "simulated"

[gpu.simulated]
count = %[4]d
model = %[5]q
minors = [%[6]s]

[agent]
interval = "1s"
segment_duration = "2s"
ship_interval = "1s"
state_dir = "%[3]s/state"
incoming_dir = "%[3]s/incoming"
socket = %[7]q
metrics_listen = ""
log_level = "debug"
`, hookCfg.Cluster.Name, node, root, hookCfg.GPU.Simulated.Count, hookCfg.GPU.Simulated.Model, strings.Join(minors, ", "), sock)
	cfgPath := filepath.Join(root, "agent.toml")
	if err := os.WriteFile(cfgPath, []byte(cfgText), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd, out := startAgent(t, bin, cfgPath)
	stopped := false
	defer func() {
		if !stopped {
			cmd.Process.Kill()
			cmd.Wait()
		}
	}()
	waitFor(t, "the agent's hook socket", settled, func() bool {
		conn, err := net.Dial("unix", sock)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})

	slurm.EnsureUser(t, "agentuser")
	job := c.Sbatch(t, "agentuser", "-A", "physics", "--gres=gpu:2", "--wrap", "sleep 5")
	c.WaitGone(t, job, 90*time.Second)
	endEvent := filepath.Join(harnessSpool, record.EventFileName(hookCfg.Cluster.Name, job, 0, node, record.JobEnd))
	waitFor(t, "the epilog's event", 30*time.Second, func() bool { _, err := os.Stat(endEvent); return err == nil })
	waitLog(t, out, `msg="job ended"`, fmt.Sprintf(" job=%d ", job))
	cmd.Process.Signal(syscall.SIGTERM)
	stopped = true
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agent exit: %v\n%s", err, out)
	}

	var start record.Event
	data, err := os.ReadFile(filepath.Join(harnessSpool, record.EventFileName(hookCfg.Cluster.Name, job, 0, node, record.JobStart)))
	if err != nil {
		t.Fatalf("the prolog's event: %v", err)
	}
	if err := json.Unmarshal(data, &start); err != nil {
		t.Fatal(err)
	}
	got := readIncoming(t, filepath.Join(root, "incoming", node))
	if len(start.GPUs) != 2 {
		t.Fatalf("prolog recorded %d GPUs", len(start.GPUs))
	}
	for _, g := range start.GPUs {
		key := record.JobGPUKey(hookCfg.Cluster.Name, job, 0, node, g.UUID)
		agg, ok := got.aggs[key]
		if !ok {
			t.Errorf("no aggregate %s; arrived: %v\nagent log:\n%s", key, got.names, out)
			continue
		}
		if !agg.Final || agg.User != "agentuser" || agg.Account != "physics" || agg.Samples < 2 || agg.IdleSeconds == 0 {
			t.Errorf("aggregate %+v: want final, agentuser/physics, at least 2 samples, idle (nothing ran on the GPU)", agg)
		}
		if agg.EnergyMJ == 0 {
			t.Errorf("aggregate %s has no energy", key)
		}
		n := 0
		for _, s := range got.samples {
			for _, j := range s.Jobs {
				if j.Job == job && s.UUID == g.UUID {
					n++
				}
			}
		}
		if uint64(n) != agg.Samples {
			t.Errorf("%s: %d raw samples attributed, aggregate counts %d", g.UUID, n, agg.Samples)
		}
	}
	for _, s := range got.samples {
		for _, j := range s.Jobs {
			if j.Job == job && s.UUID != start.GPUs[0].UUID && s.UUID != start.GPUs[1].UUID {
				t.Errorf("job %d attributed on GPU %s that it was not allocated", job, s.UUID)
			}
		}
	}
}
