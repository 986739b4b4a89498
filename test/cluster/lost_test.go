package cluster_test

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
)

// TestServerLostMidJob: the server a job runs on loses power (its slurmd,
// agent, hooks and the job itself killed at once; its disk kept). Slurm
// marks it down, ends the run NODE_FAIL and requeues the job, which runs
// again on another server. The ledger closes the lost run from Slurm's
// record (state node_fail, end from sacct: the epilog never ran), counts
// the second run once, and after the server boots again and its agent
// ships what it kept, still counts each run once: per run and node,
// per job hour, equal to sacct -D. The agent sees the new boot and ends
// the lost run's allocation: the board shows the server's GPUs free, and
// no sample after the loss is the lost run's.
func TestServerLostMidJob(t *testing.T) {
	m := get(t)
	id := m.Sbatch(t, "bob", "-A", "team-b", "--requeue", "--gres=gpu:2", "--time=5", "--wrap", "sleep 20")
	var lost string
	waitUntil(t, fmt.Sprintf("job %d running", id), 2*time.Minute, func() (bool, string) {
		out := strings.Fields(m.Run(t, "", "squeue", "-h", "-j", fmt.Sprint(id), "-o", "%T %N"))
		if len(out) == 2 && out[0] == "RUNNING" {
			lost = out[1]
			return true, ""
		}
		return false, strings.Join(out, " ")
	})
	// The run must be in the ledger (prolog shipped and ingested) and
	// sampled before the power cut, as a job minutes old would be.
	waitUntil(t, fmt.Sprintf("job %d's start and samples in the ledger", id), time.Minute, func() (bool, string) {
		runs := m.ledgerRuns(t, id)
		if len(runs) == 0 || runs[0].start < 0 {
			return false, "no run"
		}
		n := m.ledgerRows(t, `SELECT count(*) FROM job_gpus jg JOIN jobs j ON j.id = jg.job WHERE j.job_id = ? AND j.cluster = 'gsc' AND jg.samples > 0`, id)
		return len(n) == 1 && n[0] != "0", "sampled GPUs: " + strings.Join(n, "")
	})
	t.Cleanup(func() { m.sh(t, "ensure", lost) })
	m.sh(t, "kill", lost)
	killed := time.Now()

	// Slurm notices within SlurmdTimeout and requeues the job; a requeued
	// job is held for its BeginTime (two minutes), which an admin may
	// lift: the test does.
	waitUntil(t, fmt.Sprintf("job %d requeued after %s was lost", id, lost), 2*time.Minute, func() (bool, string) {
		out := strings.TrimSpace(m.Run(t, "", "squeue", "-h", "-j", fmt.Sprint(id), "-o", "%T %r"))
		return strings.HasPrefix(out, "PENDING"), out
	})
	t.Logf("%s lost at %s; Slurm requeued job %d after %s", lost, killed.Format(time.TimeOnly), id, time.Since(killed).Round(time.Second))
	m.Run(t, "", "scontrol", "update", fmt.Sprintf("jobid=%d", id), "StartTime=now")
	waitUntil(t, lost+" down in Slurm", time.Minute, func() (bool, string) {
		st := m.nodeState(t, lost)
		return strings.HasPrefix(st, "down"), st
	})
	waitUntil(t, fmt.Sprintf("job %d's second run completed", id), 3*time.Minute, func() (bool, string) {
		st := strings.TrimSpace(m.Run(t, "", "sacct", "-X", "-n", "-P", "-j", fmt.Sprint(id), "-o", "State"))
		return st == "COMPLETED", st
	})

	// The server boots again with the disk it had: its agent finds its
	// checkpoint and spool and ships what it had not.
	m.sh(t, "revive", lost)
	waitUntil(t, "the revived server's shipped files ingested", time.Minute, func() (bool, string) {
		left, _ := os.ReadDir(m.data + "/incoming/" + lost)
		var names []string
		for _, e := range left {
			names = append(names, e.Name())
		}
		return len(left) == 0, strings.Join(names, " ")
	})
	m.waitReconciled(t, 2*time.Minute, id)

	runs := m.ledgerRuns(t, id)
	sacct := m.sacctRuns(t, []uint64{id})
	if len(runs) != 2 || len(sacct) != 2 {
		t.Fatalf("job %d: ledger runs %+v, sacct runs %+v: want the lost run and the requeued one", id, runs, sacct)
	}
	first, second := runs[0], runs[1]
	if first.state != "node_fail" || first.source != "sacct" {
		t.Errorf("lost run: state %q, end from %q; want node_fail from sacct", first.state, first.source)
	}
	if _, ok := first.nodes[lost]; !ok || len(first.nodes) != 1 {
		t.Errorf("lost run on %v, want %s alone", first.nodes, lost)
	}
	if second.state != "completed" {
		t.Errorf("requeued run: state %q, want completed", second.state)
	}
	if _, ok := second.nodes[lost]; ok {
		t.Errorf("requeued run on %v: it cannot have run on the lost %s", second.nodes, lost)
	}
	if sacct[0].state != "NODE_FAIL" {
		t.Errorf("sacct says the first run ended %s, want NODE_FAIL", sacct[0].state)
	}
	m.compareWithSacct(t, []uint64{id})

	// Counted once: the job's hours add up to its runs, and to sacct's.
	var want int64
	for _, r := range sacct {
		want += r.gpus * r.elapsed
	}
	hours := m.ledgerRows(t, `SELECT coalesce(sum(h.alloc_gpu_s), 0) FROM job_hours h JOIN jobs j ON j.id = h.job WHERE j.cluster = 'gsc' AND j.job_id = ?`, id)
	if len(hours) != 1 || hours[0] != fmt.Sprint(want) {
		t.Errorf("job %d's hours hold %v GPU-seconds, sacct -D %d", id, hours, want)
	}
	// The server came back in a new boot: its agent ended the lost run's
	// allocation (no epilog ever will) and neither shows its GPUs held by
	// it nor samples them for it.
	waitBoard(t, m, lost+"'s GPUs free after its reboot", func(doc board.StatusDoc) (bool, string) {
		st := states(doc, []string{lost})
		return st == "free free free free | ", st
	})
	for _, row := range m.ledgerRows(t, `SELECT coalesce(max(jg.last), 0) FROM job_gpus jg JOIN jobs j ON j.id = jg.job
 WHERE j.cluster = 'gsc' AND j.job_id = ? AND j.restart = 0`, id) {
		// a few seconds for a skewed clock and the sampling interval
		if last := atoi[int64](row); last > sacct[0].end+6 {
			t.Errorf("the lost run's GPUs were sampled for it until %d, %d s after Slurm's end %d: the revived agent kept its allocation",
				last, last-sacct[0].end, sacct[0].end)
		}
	}
	if q := m.quarantined(t); len(q) > 0 {
		t.Errorf("ingest quarantined:\n%s", strings.Join(q, "\n"))
	}
}
