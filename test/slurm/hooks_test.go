// Package slurm_test runs real jobs on the harness's single-node Slurm and
// checks what the real prolog and epilog recorded.
package slurm_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// minors in NVML index order, as the harness configures the simulated GPUs.
var minors = []int{2, 3, 0, 1}

func uuidOfMinor(node string, minor int) string {
	for i, m := range minors {
		if m == minor {
			return sim.UUID(node, i)
		}
	}
	return ""
}

// waitEvent waits for the job's event of kind in the spool.
func waitEvent(t *testing.T, c *slurm.Cluster, id uint64, kind record.Kind, timeout time.Duration) record.Event {
	t.Helper()
	pattern := filepath.Join(c.Path("GPUSUITE_SLURM_SPOOL"), fmt.Sprintf("event.testcl.%d.*.%s.json", id, kind))
	deadline := time.Now().Add(timeout)
	for {
		names, _ := filepath.Glob(pattern)
		if len(names) == 1 {
			b, err := os.ReadFile(names[0])
			if err != nil {
				t.Fatal(err)
			}
			var ev record.Event
			if err := json.Unmarshal(b, &ev); err != nil {
				t.Fatalf("%s: %v", names[0], err)
			}
			return ev
		}
		if len(names) > 1 {
			t.Fatalf("job %d: %d %s events: %v", id, len(names), kind, names)
		}
		if time.Now().After(deadline) {
			logs, _ := os.ReadFile(filepath.Join(c.Path("GPUSUITE_SLURM_DIR"), "log", strings.TrimPrefix(map[record.Kind]string{record.JobStart: "prolog", record.JobEnd: "epilog"}[kind], "")+".log"))
			t.Fatalf("job %d: no %s event after %s; hook log:\n%s", id, kind, timeout, tail(string(logs), 2000))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return s[len(s)-n:]
	}
	return s
}

type want struct {
	user, account string
	ngpu          int
	exit          int
	signal        int
}

func checkJob(t *testing.T, c *slurm.Cluster, id uint64, w want) (record.Event, record.Event) {
	t.Helper()
	start := waitEvent(t, c, id, record.JobStart, 60*time.Second)
	end := waitEvent(t, c, id, record.JobEnd, 60*time.Second)
	node := c.Path("GPUSUITE_SLURM_NODE")
	for _, ev := range []record.Event{start, end} {
		if ev.Job.ID != id || ev.Node != node || ev.Cluster != "testcl" || ev.Job.Partition != "gpu" {
			t.Errorf("job %d %s: header %+v", id, ev.Kind, ev)
		}
		if ev.Job.User != w.user {
			t.Errorf("job %d %s: user %q, want %q", id, ev.Kind, ev.Job.User, w.user)
		}
		if ev.Job.Account != w.account {
			t.Errorf("job %d %s: account %q, want %q", id, ev.Kind, ev.Job.Account, w.account)
		}
		if len(ev.GPUs) != w.ngpu {
			t.Errorf("job %d %s: %d GPUs, want %d", id, ev.Kind, len(ev.GPUs), w.ngpu)
		}
		for _, g := range ev.GPUs {
			if g.UUID != uuidOfMinor(node, g.Minor) || g.EnergyMJ == nil {
				t.Errorf("job %d %s: minor %d recorded as %q, want %q", id, ev.Kind, g.Minor, g.UUID, uuidOfMinor(node, g.Minor))
			}
		}
		if len(ev.Quality) != 0 {
			t.Errorf("job %d %s: quality flags %v", id, ev.Kind, ev.Quality)
		}
	}
	if start.Time.After(end.Time) {
		t.Errorf("job %d: start %s after end %s", id, start.Time, end.Time)
	}
	if end.Job.Exit == nil || end.Job.Exit.Code != w.exit || end.Job.Exit.Signal != w.signal {
		t.Errorf("job %d: exit %+v, want code %d signal %d", id, end.Job.Exit, w.exit, w.signal)
	}
	// Same GPUs at both ends, and the energy counter never runs backwards.
	for i := range start.GPUs {
		if i < len(end.GPUs) && (start.GPUs[i].UUID != end.GPUs[i].UUID || *end.GPUs[i].EnergyMJ < *start.GPUs[i].EnergyMJ) {
			t.Errorf("job %d: GPU %d start %+v end %+v", id, i, start.GPUs[i], end.GPUs[i])
		}
	}
	return start, end
}

func TestRealSlurmJobs(t *testing.T) {
	c := slurm.Get(t)
	slurm.EnsureUser(t, "alice")
	slurm.EnsureUser(t, "bob")

	t.Run("sbatch two GPUs as alice", func(t *testing.T) {
		t.Parallel()
		id := c.Sbatch(t, "alice", "-A", "team-a", "--gres=gpu:2", "--wrap", "sleep 1")
		checkJob(t, c, id, want{user: "alice", account: "team-a", ngpu: 2})
	})
	t.Run("srun one GPU", func(t *testing.T) {
		t.Parallel()
		out := c.Run(t, "bob", "srun", "-A", "team-b", "--gres=gpu:1", "sh", "-c", "echo $SLURM_JOB_ID")
		id, err := strconv.ParseUint(strings.TrimSpace(out), 10, 64)
		if err != nil {
			t.Fatalf("srun printed %q", out)
		}
		checkJob(t, c, id, want{user: "bob", account: "team-b", ngpu: 1})
	})
	t.Run("failing job exit 3", func(t *testing.T) {
		t.Parallel()
		id := c.Sbatch(t, "alice", "-A", "team-a", "--gres=gpu:1", "--wrap", "exit 3")
		checkJob(t, c, id, want{user: "alice", account: "team-a", ngpu: 1, exit: 3})
	})
	t.Run("no GPU", func(t *testing.T) {
		t.Parallel()
		id := c.Sbatch(t, "bob", "-A", "team-b", "--wrap", "true")
		checkJob(t, c, id, want{user: "bob", account: "team-b", ngpu: 0})
	})
	t.Run("array job", func(t *testing.T) {
		t.Parallel()
		// slurmd 22.05 gives Prolog/Epilog no SLURM_ARRAY_* variables: each
		// task is a job of its own there, found here by its output.
		out, err := os.MkdirTemp("", "gpusuite-array-")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(out) })
		os.Chmod(out, 0o777) // the job runs as alice
		arrayID := c.Sbatch(t, "alice", "-A", "team-a", "--gres=gpu:1", "--array=0-2",
			"-o", filepath.Join(out, "task_%a.out"), "--wrap", "echo $SLURM_JOB_ID")
		c.WaitGone(t, arrayID, 90*time.Second)
		for task := 0; task < 3; task++ {
			b, err := os.ReadFile(filepath.Join(out, fmt.Sprintf("task_%d.out", task)))
			if err != nil {
				t.Fatalf("task %d: %v", task, err)
			}
			id, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64)
			if err != nil {
				t.Fatalf("task %d printed %q", task, b)
			}
			checkJob(t, c, id, want{user: "alice", account: "team-a", ngpu: 1})
		}
	})
	t.Run("cancelled while running", func(t *testing.T) {
		t.Parallel()
		id := c.Sbatch(t, "bob", "-A", "team-b", "--gres=gpu:1", "--wrap", "sleep 300")
		c.WaitState(t, id, "RUNNING", 60*time.Second)
		c.Run(t, "", "scancel", strconv.FormatUint(id, 10))
		// slurmd hands the epilog of a cancelled batch job 0:0; the end is
		// what matters here (the store takes the state from sacct).
		checkJob(t, c, id, want{user: "bob", account: "team-b", ngpu: 1})
	})
}

// Many jobs at once on one node: every prolog and epilog event is there.
func TestRealSlurmBurst(t *testing.T) {
	c := slurm.Get(t)
	const n = 12
	ids := make([]uint64, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ids[i] = c.Sbatch(t, "", "--gres=gpu:1", "--wrap", "true")
		}(i)
	}
	wg.Wait()
	for _, id := range ids {
		waitEvent(t, c, id, record.JobStart, 120*time.Second)
		waitEvent(t, c, id, record.JobEnd, 120*time.Second)
	}
}
