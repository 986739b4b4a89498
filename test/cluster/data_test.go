package cluster_test

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// hookDone matches a hook's last log line for a job: `msg=done ... job=ID
// elapsed=DURATION`.
var hookDone = regexp.MustCompile(`msg=done prog=(prolog|epilog) job=(\d+) elapsed=(\S+)`)

// TestDataUnreachable: one server loses /data (the share goes read-only
// in its mount namespace alone) while a job runs there. Its prolog and
// epilog write only the node-local spool: they finish in well under their
// bound and exit 0 (the job completes, the server stays in service). Its
// agent cannot ship, says so, backs off and keeps the records; the head
// has nothing of the job meanwhile, and shows the server stale. When the
// share comes back, the agent ships everything and the ledger's job
// equals sacct's; nothing is lost, nothing quarantined, no partial file
// left on /data.
func TestDataUnreachable(t *testing.T) {
	m := get(t)
	node := m.nodes[1]
	t.Cleanup(func() { m.sh(t, "ensure", node) })
	agentLogBefore := len(m.nodeLog(t, node, "agent.log"))
	m.sh(t, "data-off", node)

	id := m.Sbatch(t, "carol", "-A", "team-c", "-w", node, "--gres=gpu:2", "--time=5", "--wrap", "sleep 3")
	acc := m.WaitAccounted(t, 2*time.Minute, 1, id)
	if acc[0].State != "COMPLETED" {
		t.Errorf("job %d ended %s with /data gone from %s, want COMPLETED (a failing hook fails or requeues it)", id, acc[0].State, node)
	}
	// Both hooks ran to their end, quickly: parse their own timing.
	for _, hook := range []string{"prolog", "epilog"} {
		var elapsed time.Duration
		waitUntil(t, hook+" of job "+fmt.Sprint(id)+" logged its end", 30*time.Second, func() (bool, string) {
			for _, mt := range hookDone.FindAllStringSubmatch(m.nodeLog(t, node, hook+".log"), -1) {
				if mt[1] == hook && mt[2] == fmt.Sprint(id) {
					d, err := time.ParseDuration(mt[3])
					if err != nil {
						t.Fatalf("%s elapsed %q: %v", hook, mt[3], err)
					}
					elapsed = d
					return true, ""
				}
			}
			return false, "no done line"
		})
		// hooks.timeout is 5 s; a hook that waited on /data would take it.
		if elapsed > time.Second {
			t.Errorf("%s of job %d took %s with /data unreachable, want well under a second", hook, id, elapsed)
		}
	}
	waitUntil(t, node+" idle after the job (no hook drained it)", time.Minute, func() (bool, string) {
		st := m.nodeState(t, node)
		return st == "idle", st
	})

	// The agent tried, failed, and holds the job's events in its spool.
	spool := filepath.Join(m.Path("GPUSUITE_SLURM_DIR"), "nodes", node, "spool")
	waitUntil(t, "the agent reports shipping failed and keeps job "+fmt.Sprint(id)+"'s events", time.Minute, func() (bool, string) {
		log := m.nodeLog(t, node, "agent.log")[agentLogBefore:]
		held, _ := filepath.Glob(filepath.Join(spool, fmt.Sprintf("event.gsc.%d.*", id)))
		return strings.Contains(log, "shipping failed; retrying") && len(held) == 2,
			fmt.Sprintf("%d events held; agent log since: %s", len(held), tailLines(log, 3))
	})
	if runs := m.ledgerRuns(t, id); len(runs) != 0 {
		t.Errorf("the ledger has job %d while %s could not ship: %+v", id, node, runs)
	}
	waitUntil(t, node+" stale on the board", 30*time.Second, func() (bool, string) {
		for _, n := range m.boardDoc(t).Nodes {
			if n.Name == node {
				return n.Stale, fmt.Sprintf("stale %v, condition %q", n.Stale, n.Condition)
			}
		}
		return false, "not on the board"
	})

	m.sh(t, "data-on", node)
	m.waitReconciled(t, 2*time.Minute, id)
	m.compareWithSacct(t, []uint64{id})
	waitUntil(t, "the agent's spool shipped", time.Minute, func() (bool, string) {
		held, _ := filepath.Glob(filepath.Join(spool, fmt.Sprintf("event.gsc.%d.*", id)))
		return len(held) == 0, strings.Join(held, " ")
	})
	if log := m.nodeLog(t, node, "agent.log")[agentLogBefore:]; !strings.Contains(log, "shipping works again") {
		t.Errorf("the agent did not report shipping again; its log since /data went:\n%s", tailLines(log, 10))
	}
	// Samples of the job's GPUs reached the ledger too (aggregates and
	// segments were held, not dropped).
	sampled := m.ledgerRows(t, `SELECT count(*) FROM job_gpus jg JOIN jobs j ON j.id = jg.job WHERE j.cluster = 'gsc' AND j.job_id = ? AND jg.samples > 0`, id)
	if len(sampled) != 1 || sampled[0] != "2" {
		t.Errorf("job %d: %v GPUs with samples in the ledger, want 2", id, sampled)
	}
	entries, _ := os.ReadDir(filepath.Join(m.data, "incoming", node))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			t.Errorf("partial file left on /data: incoming/%s/%s", node, e.Name())
		}
	}
	if q := m.quarantined(t); len(q) > 0 {
		t.Errorf("ingest quarantined:\n%s", strings.Join(q, "\n"))
	}
}

// tailLines is the last n lines of s.
func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
