package slurm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// TestMIGSlices: on the MIG-shaped cluster (harness.sh with
// GPUSUITE_SLURM_MIG=1: mig1's GPU 1 cut into 3g.40gb + 4 × 1g.10gb,
// typed gres over fake nvidia-caps), a job asking gpu:1g.10gb:1 and one
// asking gpu:3g.40gb:1 run side by side on that one GPU; the real prolog
// records each with its MIG instance (UUID, profile, parent, GPU and
// compute instance); gpuacct free counts the 1g.10gb left free; the
// ledger's slice-seconds, through the real ingest, are sacct's gres/gpu
// and sreport's, GPU-EQ weighs them 1/7 and 3/7, and Slurm's billing of
// the typed profiles is the ledger's.
func TestMIGSlices(t *testing.T) {
	slurm.Get(t) // the suite's Slurm: skipped, or failed, as every test here
	c := startMIG(t)
	slurm.EnsureUser(t, "alice")
	slurm.EnsureUser(t, "bob")
	gpuacct := slurm.Binary(t, "gpuacct")
	node := c.Path("GPUSUITE_SLURM_NODE")

	// in partition billed, which weighs each profile (harness.sh)
	small := c.Sbatch(t, "alice", "-p", "billed", "-A", "team-a", "-c", "1", "--gres=gpu:1g.10gb:1", "--wrap", "sleep 8")
	large := c.Sbatch(t, "bob", "-p", "billed", "-A", "team-b", "-c", "1", "--gres=gpu:3g.40gb:1", "--wrap", "sleep 8")
	c.WaitState(t, small, "RUNNING", time.Minute)
	c.WaitState(t, large, "RUNNING", time.Minute)
	if out := c.Run(t, "", "squeue", "-h", "-t", "R", "-w", node, "-o", "%i"); !strings.Contains(out, strconv.FormatUint(small, 10)) ||
		!strings.Contains(out, strconv.FormatUint(large, 10)) {
		t.Errorf("jobs %d and %d not running side by side:\n%s", small, large, out)
	}

	t.Run("free and status count the slices", func(t *testing.T) {
		cfg := filepath.Join(t.TempDir(), "gpusuite.toml")
		if err := os.WriteFile(cfg, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		run := func(args ...string) []byte {
			t.Helper()
			var stderr bytes.Buffer
			cmd := exec.Command(gpuacct, append([]string{"--config", cfg}, args...)...)
			cmd.Env, cmd.Stderr = c.Env(), &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("gpuacct %v: %v\n%s%s", args, err, out, stderr.String())
			}
			return out
		}
		live := t.TempDir()
		type slice struct {
			Node, Profile     string
			Total, Used, Free int
		}
		var doc struct {
			MIGSlices []slice `json:"mig_slices"`
		}
		if err := json.Unmarshal(run("status", "--format", "json", "--live-dir", live), &doc); err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff([]slice{{node, "1g.10gb", 4, 1, 3}, {node, "3g.40gb", 1, 1, 0}}, doc.MIGSlices); d != "" {
			t.Errorf("gpuacct status --format json: mig_slices (-want +got):\n%s", d)
		}
		out := run("free", "--live-dir", live)
		t.Logf("gpuacct free:\n%s", out)
		if !strings.Contains(string(out), "3 × 1g.10gb free on "+node+"\n") || strings.Contains(string(out), "3g.40gb free") {
			t.Errorf("gpuacct free: want 3 × 1g.10gb free on %s and no 3g.40gb:\n%s", node, out)
		}
	})

	// GPU 1's instances as gpu.simulated.mig lays them out: GPU instance
	// 1 the 3g.40gb, 2.. the 1g.10gb; Slurm gives the first free one.
	parent := sim.UUID(node, 1)
	gi := func(n int) *int { return &n }
	want := map[uint64]record.GPU{
		small: {Minor: 1, Index: gi(1), UUID: sim.MIGUUID(parent, 1), Parent: parent, Profile: "1g.10gb", GI: gi(2), CI: gi(0)},
		large: {Minor: 1, Index: gi(1), UUID: sim.MIGUUID(parent, 0), Parent: parent, Profile: "3g.40gb", GI: gi(1), CI: gi(0)},
	}
	for id, w := range want {
		ev := waitEvent(t, c, id, record.JobStart, time.Minute)
		if len(ev.GPUs) != 1 {
			t.Fatalf("job %d: %d GPUs recorded: %+v", id, len(ev.GPUs), ev.GPUs)
		}
		g := ev.GPUs[0]
		g.Model, g.Missing = "", nil
		if d := cmp.Diff(w, g); d != "" {
			t.Errorf("job %d: slice recorded (-want +got):\n%s", id, d)
		}
		if len(ev.Quality) > 0 {
			t.Errorf("job %d: quality %v", id, ev.Quality)
		}
	}

	rows := c.WaitAccounted(t, 3*time.Minute, 2, small, large)
	for _, r := range rows {
		waitEvent(t, c, r.JobIDRaw, record.JobEnd, time.Minute)
	}
	first := time.Now()
	for _, r := range rows {
		if r.Start.Before(first) {
			first = r.Start
		}
	}
	got := newLedger(t, gpuacct, c, rows, nil, "").export(t)
	for _, r := range rows {
		g := got[r.JobIDRaw]
		if g.End == nil {
			t.Fatalf("job %d: not in the ledger or not ended: %+v", r.JobIDRaw, g)
		}
		elapsed := *g.End - g.Start
		t.Logf("job %d: sacct gres/gpu %d × %d s = %d; ledger %d slices × %d s = %d slice-s",
			r.JobIDRaw, r.GPUs, r.ElapsedRaw, r.GPUSeconds(), g.GPUs, elapsed, g.AllocGPUS)
		// as TestSacct: the hooks run a moment after Slurm's start and end
		if r.GPUs != 1 || g.GPUs != 1 || abs(g.AllocGPUS-r.GPUSeconds()) > 2 {
			t.Errorf("job %d: ledger %d slices, %d slice-s; sacct gres/gpu=%d, %d", r.JobIDRaw, g.GPUs, g.AllocGPUS, r.GPUs, r.GPUSeconds())
		}
	}

	// With Slurm's times (ingest reconciles with sacct), gpuacct report
	// per account and user equals sreport's gres/gpu to the second, and
	// its GPU-EQ weighs each slice by its share of the A100.
	from := first.UTC().Truncate(time.Hour)
	to := time.Now().UTC().Truncate(time.Hour).Add(time.Hour)
	st := sreportTest{accounts: []string{"team-a", "team-b"}}
	l := newLedger(t, gpuacct, c, rows, nil, "sacct")
	sreported := sreportSeconds(t, c, st, from, to)
	t.Logf("sreport -t seconds -T gres/gpu: %v", sreported)
	if d := cmp.Diff(sreported, gpuacctSeconds(t, l, st, from, to)); d != "" {
		t.Errorf("slice-seconds per account and user (-sreport +gpuacct):\n%s", d)
	}
	const ts = "2006-01-02T15:04:05"
	out, _ := l.run(t, "report", "accounts", "--format", "json", "--tz", "UTC", "--start", from.Format(ts), "--end", to.Format(ts))
	var rep struct {
		Rows []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("gpuacct report accounts: %v\n%s", err, out)
	}
	share := map[string]float64{"team-a": 1.0 / 7, "team-b": 3.0 / 7}
	checked := 0
	for _, r := range rep.Rows {
		acct, _ := r["account"].(string)
		alloc, _ := r["alloc_gpu_hours"].(float64)
		eq, ok := r["gpu_equivalent_hours"].(float64)
		w, mine := share[acct]
		if !mine {
			continue
		}
		checked++
		if !ok || alloc <= 0 || math.Abs(eq-alloc*w) > 1e-3 {
			t.Errorf("account %s: GPU-EQ %v (present %v) for %v slice-hours; want × %.3f\n%s", acct, eq, ok, alloc, w, out)
		}
	}
	if checked != len(share) {
		t.Errorf("gpuacct report accounts: %d of the accounts %v:\n%s", checked, share, out)
	}

	// Billing by type goes through the billing code as it is: Slurm
	// weighs the typed gres of each profile (CPU=1.0, 1g.10gb=1.0,
	// 3g.40gb=3.0), and the ledger bills each run Slurm's billing=N × its
	// seconds.
	billing := sacctBilling(t, c, []uint64{small, large})
	if d := cmp.Diff(map[uint64]int64{small: 2, large: 4}, billing); d != "" {
		t.Errorf("sacct's billing=N by profile (-want +got):\n%s", d)
	}
	for _, r := range rows {
		want := strconv.FormatInt(billing[r.JobIDRaw]*r.ElapsedRaw, 10)
		got := strings.Join(ledgerdb.Strings(t, l.db, fmt.Sprintf(`SELECT CAST(round(billing) AS INTEGER) FROM jobs WHERE job_id = %d`, r.JobIDRaw)), "")
		if got != want {
			t.Errorf("job %d: ledger billing %s, want Slurm's billing=%d × ElapsedRaw=%d = %s", r.JobIDRaw, got, billing[r.JobIDRaw], r.ElapsedRaw, want)
		}
	}
}

// startMIG starts the MIG-shaped cluster (its own directory and ports,
// beside the shared one) for this test alone, and stops it when the test
// ends.
func startMIG(t *testing.T) *slurm.Cluster {
	t.Helper()
	lock, err := os.OpenFile(filepath.Join(os.TempDir(), "gpusuite-slurm-mig-test.lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lock.Close() })
	poll.Until(t, "the MIG cluster's test lock", slurm.LockWait, 100*time.Millisecond, func() (bool, string) {
		return syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil, "held by another test run"
	})
	harness := func(verb string) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, "./harness.sh", verb)
		cmd.Env = append(os.Environ(), "GPUSUITE_SLURM_MIG=1")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("GPUSUITE_SLURM_MIG=1 harness.sh %s: %v\n%s", verb, err, out)
		}
	}
	// stop also what a start that failed half-way left running
	t.Cleanup(func() { harness("stop") })
	harness("start")
	dir := os.Getenv("GPUSUITE_SLURM_MIG_DIR")
	if dir == "" {
		dir = "/run/gpusuite-slurm-mig"
	}
	return slurm.Open(t, filepath.Join(dir, "env"), "GPUSUITE_SLURM_MIG=1 test/slurm/harness.sh")
}
