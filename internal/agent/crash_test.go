package agent

import (
	"fmt"
	"io"
	"math/rand"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/testkit/clock"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
)

// checkConsistent checks what arrived: no sample twice (under one key or
// two), and each final aggregate counts exactly the raw samples of its job.
func checkConsistent(t *testing.T, got shipped) {
	t.Helper()
	type at struct {
		uuid string
		t    time.Time
	}
	seen := map[at]bool{}
	perJob := map[string]uint64{}
	for _, s := range got.samples {
		k := at{s.UUID, s.Time}
		if seen[k] {
			t.Errorf("sample of %s at %s arrived twice", s.UUID, s.Time)
		}
		seen[k] = true
		for _, j := range s.Jobs {
			perJob[record.JobGPUKey(testCluster, j.Job, j.Restart, testNode, s.UUID)]++
		}
	}
	segs := map[uint64]bool{}
	for _, h := range got.segments {
		if segs[h.Seq] {
			t.Errorf("segment %d arrived twice", h.Seq)
		}
		segs[h.Seq] = true
	}
	if len(perJob) == 0 {
		t.Fatalf("no attributed samples arrived")
	}
	for key, n := range perJob {
		agg, ok := got.aggs[key]
		if !ok {
			t.Errorf("no aggregate for %s", key)
			continue
		}
		if !agg.Final || agg.Samples != n {
			t.Errorf("%s: aggregate final=%v with %d samples; %d raw samples arrived", key, agg.Final, agg.Samples, n)
		}
	}
}

// An agent that dies without Stop (the open segment and the checkpoint as
// a crash leaves them) loses nothing and ships nothing twice.
func TestCrashRecoveryInProcess(t *testing.T) {
	e := newEnv(t, 2, nil)
	e.sim.Device(0).SetWorkload(sim.Busy(60, 1000))
	e.cgroup(1000, 3)
	e.event(record.JobStart, 3, 0, 1)
	e.cycles(90) // one roll at 60 s, 30 samples in the open segment
	e.ship()
	e.a = e.open() // crash: no Stop; a new agent on the same directories
	if e.a.seg != nil {
		t.Fatalf("recovered agent kept a segment open")
	}
	e.cycles(45)
	e.a = e.open() // and again, right after a roll
	e.cycles(30)
	e.event(record.JobEnd, 3, 0, 1)
	e.cycles(2)
	e.a.Stop()
	if _, err := e.ship(); err != nil {
		t.Fatal(err)
	}
	got := e.arrived()
	checkConsistent(t, got)
	if n := len(got.samples); n != 2*167 {
		t.Errorf("%d samples arrived, want %d", n, 2*167)
	}
	agg := got.aggs[record.JobGPUKey(testCluster, 3, 0, testNode, sim.UUID(testNode, 0))]
	if want := uint64(150000+4000*60) * 165; agg.EnergyMJ != want {
		t.Errorf("energy %d, want %d", agg.EnergyMJ, want)
	}
}

// agentBinary is the real gpuacct binary built with the simulated GPUs
// the tests run it on: $GPUSUITE_BIN/simulated/gpuacct when make test
// built it, else built here with -tags simulated.
func agentBinary(t *testing.T) string {
	t.Helper()
	if d := os.Getenv("GPUSUITE_BIN"); d != "" {
		p := filepath.Join(d, "simulated", "gpuacct")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p := filepath.Join(t.TempDir(), "gpuacct")
	cmd := exec.Command("go", "build", "-tags", "simulated", "-o", p, "github.com/aicloud/gpusuite/gpuacct")
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build gpuacct: %v\n%s", err, out)
	}
	return p
}

// writeAgentConfig writes a config for a subprocess agent under root.
func writeAgentConfig(t *testing.T, root string, extra string) string {
	t.Helper()
	for _, d := range []string{"incoming", "proc"} {
		if err := os.MkdirAll(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	metrics := `metrics_listen = ""`
	if strings.Contains(extra, "metrics_listen") {
		metrics = ""
	}
	cfg := fmt.Sprintf(`[cluster]
name = %q
node = %q

[spool]
dir = "%[3]s/spool"

[gpu]
backend = "simulated"

[gpu.simulated]
count = 2
model = "h100"

[agent]
interval = "1s"
segment_duration = "3s"
ship_interval = "1s"
state_dir = "%[3]s/state"
incoming_dir = "%[3]s/incoming"
proc_root = "%[3]s/proc"
%[5]s
log_level = "debug"
%[4]s
`, testCluster, testNode, root, extra, metrics)
	p := filepath.Join(root, "gpusuite.toml")
	if err := os.WriteFile(p, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// waitLog waits until the agent has logged a line holding every one of
// parts.
func waitLog(t *testing.T, out *logs.Buffer, parts ...string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the agent to log %q", parts), settled, func() bool {
		for _, l := range strings.Split(out.String(), "\n") {
			all := true
			for _, p := range parts {
				all = all && strings.Contains(l, p)
			}
			if all {
				return true
			}
		}
		return false
	})
}

func startAgent(t *testing.T, bin, cfg string, env ...string) (*exec.Cmd, *logs.Buffer) {
	t.Helper()
	cmd := exec.Command(bin, "--config", cfg, "agent")
	out := &logs.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	return cmd, out
}

// kill -9 of the real agent at random moments (mid-sample, mid-roll,
// mid-ship): no partial record is ever visible downstream, and after the
// restarts nothing is lost or shipped twice under another key.
func TestKill9DuringWrites(t *testing.T) {
	bin := agentBinary(t)
	root := t.TempDir()
	cfg := writeAgentConfig(t, root, "")
	e := &testEnv{t: t, cfg: testConfig(root), clk: clock.New(time.Now())}
	e.cfg.Spool.Dir = filepath.Join(root, "spool")
	e.incoming = filepath.Join(root, "incoming")
	// the prolog's record of the job, as it would be spooled
	writeEventFile(t, e.cfg.Spool.Dir, record.JobStart, 77, time.Now())
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	for i := 0; i < 4; i++ {
		cmd, out := startAgent(t, bin, cfg)
		// The random moment of the kill is what is under test, not a wait.
		time.Sleep(time.Duration(1500+rng.Intn(2500)) * time.Millisecond)
		if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		cmd.Wait()
		if strings.Contains(out.String(), "level=ERROR") {
			t.Errorf("run %d logged errors:\n%s", i, out)
		}
		checkWhole(t, filepath.Join(root, "incoming", testNode))
	}
	// A kill mid-copy leaves the shipper's temp file, never under a record
	// name (checkWhole); ingest passes over them. Clear them so that the
	// check below holds the clean run alone to leaving none.
	leftovers, _ := filepath.Glob(filepath.Join(root, "incoming", testNode, ".*"))
	for _, p := range leftovers {
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
	}
	// The last run serves /metrics, to be watched until it has sampled
	// enough, and ends the job before it stops.
	cfg = writeAgentConfig(t, root, `metrics_listen = "127.0.0.1:0"`)
	cmd, out := startAgent(t, bin, cfg)
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	addr := metricsAddr(t, out)
	waitFor(t, "16 samples in the last run", settled, func() bool { return scrapeCounter(addr, "gpusuite_agent_samples_total") >= 16 })
	if !scrapeHas(addr, "gpusuite_build_info{") {
		t.Errorf("/metrics lacks gpusuite_build_info")
	}
	writeEventFile(t, e.cfg.Spool.Dir, record.JobEnd, 77, time.Now())
	waitLog(t, out, `msg="job ended"`, " job=77 ")
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("agent did not stop cleanly: %v\n%s", err, out)
	}
	if left := spoolNames(t, e.cfg.Spool.Dir); len(left) != 0 {
		t.Errorf("spool keeps %v after a clean stop", left)
	}
	got := readIncoming(t, filepath.Join(root, "incoming", testNode))
	checkConsistent(t, got)
	if len(got.samples) < 2*8 {
		t.Errorf("only %d samples arrived", len(got.samples))
	}
}

// checkWhole fails on any partial file under a final name.
func checkWhole(t *testing.T, dir string) {
	t.Helper()
	entries, _ := os.ReadDir(dir)
	for _, en := range entries {
		if strings.HasPrefix(en.Name(), ".") {
			continue // a temp file a killed shipper left; never a record
		}
		data, err := os.ReadFile(filepath.Join(dir, en.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if len(data) == 0 || data[len(data)-1] != '\n' && !strings.HasSuffix(en.Name(), ".json") {
			t.Errorf("partial record visible: %s", en.Name())
		}
	}
}

func writeEventFile(t *testing.T, spoolDir string, kind record.Kind, job uint64, at time.Time) {
	t.Helper()
	e := &testEnv{t: t, cfg: testConfig(filepath.Dir(spoolDir)), clk: clock.New(at)}
	e.cfg.Spool.Dir = spoolDir
	if err := os.MkdirAll(spoolDir, 0o700); err != nil {
		t.Fatal(err)
	}
	s, _ := sim.New(sim.Options{Node: testNode, Count: 2, Model: "h100"})
	e.sim = s
	e.event(kind, job, 0, 1)
}

// metricsAddr is the address the agent logged it serves /metrics on.
func metricsAddr(t *testing.T, out *logs.Buffer) string {
	t.Helper()
	re := regexp.MustCompile(`msg="serving /metrics".* addr=(\S+)`)
	var addr string
	waitFor(t, "the agent's /metrics address", settled, func() bool {
		if m := re.FindStringSubmatch(out.String()); m != nil {
			addr = m[1]
		}
		return addr != ""
	})
	return addr
}

// scrapeCounter reads one counter from /metrics at addr; -1 when it
// cannot.
func scrapeCounter(addr, name string) float64 {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get("http://" + addr + "/metrics")
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return -1
	}
	for _, l := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(l, name+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err == nil {
				return f
			}
		}
	}
	return -1
}
