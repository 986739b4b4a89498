package cluster_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestSkewedClock: one server's clock runs a few seconds ahead (gpu3's, by
// the harness's gpu.simulated.clock_offset, for its hooks and agent). Its
// records say so (its live snapshot and its last samples are dated ahead
// of the head's clock), ingest takes them (a few seconds is within
// ingest.max_future), and the jobs it ran, alone and with another server,
// still equal Slurm's accounting, which reconciliation takes over the
// hooks' times.
func TestSkewedClock(t *testing.T) {
	m := get(t)
	node, off, ok := strings.Cut(m.Path("GPUSUITE_CLUSTER_SKEW"), "=")
	skew, err := time.ParseDuration(off)
	if !ok || err != nil || skew <= 0 {
		t.Fatalf("GPUSUITE_CLUSTER_SKEW = %q, want NODE=DURATION ahead", m.Path("GPUSUITE_CLUSTER_SKEW"))
	}
	other := m.nodes[0]
	if other == node {
		other = m.nodes[1]
	}

	// The server's clock is off: its live snapshot is dated skew ahead of
	// when the file was written (the file's mtime is the head's clock).
	live := filepath.Join(m.data, "live", node+".json")
	waitUntil(t, node+"'s live snapshot dated "+skew.String()+" ahead", 30*time.Second, func() (bool, string) {
		fi, err := os.Stat(live)
		if err != nil {
			return false, err.Error()
		}
		b, err := os.ReadFile(live)
		if err != nil {
			return false, err.Error()
		}
		var snap struct {
			T time.Time `json:"t"`
		}
		if err := json.Unmarshal(b, &snap); err != nil {
			return false, err.Error()
		}
		ahead := snap.T.Sub(fi.ModTime())
		// The snapshot is dated when its sample was taken, just before the write.
		return ahead > skew-time.Second && ahead <= skew+100*time.Millisecond, "dated " + ahead.String() + " ahead of its write"
	})

	alone := m.Sbatch(t, "alice", "-A", "team-a", "-w", node, "--gres=gpu:3", "--time=5", "--wrap", "sleep 3")
	both := m.Sbatch(t, "bob", "-A", "team-b", "--nodes=2", "-w", node+","+other, "--gres=gpu:1", "--time=5", "--wrap", "srun sleep 2")
	ids := []uint64{alone, both}
	m.WaitAccounted(t, 2*time.Minute, 2, ids...)
	m.waitReconciled(t, 2*time.Minute, ids...)
	m.compareWithSacct(t, ids)

	// The agent's samples of the job are dated by the skewed clock: the
	// last one (taken before the epilog told the agent the job ended, so
	// at most a sampling interval before Slurm's end) reads past the end.
	for _, r := range m.sacctRuns(t, []uint64{alone}) {
		last := m.ledgerRows(t, `SELECT coalesce(jn.last_sample, 0) FROM job_nodes jn JOIN jobs j ON j.id = jn.job
 WHERE j.cluster = 'gsc' AND j.job_id = ?`, alone)
		var at int64
		if len(last) == 1 {
			at = atoi[int64](last[0])
		}
		if at < r.end+int64(skew/time.Second)-2 {
			t.Errorf("job %d's last sample on %s is dated %d, Slurm's end %d: want it %s ahead, as the server's clock", alone, node, at, r.end, skew)
		}
	}
	if q := m.quarantined(t); len(q) > 0 {
		t.Errorf("ingest quarantined:\n%s", strings.Join(q, "\n"))
	}
}
