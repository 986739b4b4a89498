// Package slurm connects Go tests to the real Slurm clusters make test
// starts for every package: the single node of test/slurm/harness.sh and
// the multi-node cluster of test/cluster/harness.sh.
package slurm

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/poll"
)

// Cluster is the running test cluster.
type Cluster struct {
	// Vars are the harness's KEY=VALUE pairs (SLURM_CONF, GPUSUITE_SLURM_DIR, ...).
	Vars map[string]string
}

// LockWait bounds how long Get and Exclusive wait for the harness's test
// lock: a whole package's tests may hold it, and make test allows 30 minutes.
const LockWait = 10 * time.Minute

// Get returns the cluster, skipping the test when none was started and
// GPUSUITE_REQUIRE_SLURM is not 1 (make test sets it, so there a missing
// cluster fails instead). The test holds the harness's lock shared until
// it ends, so tests of many packages share the node at once but none
// while a test holds it exclusive. A test that holds it exclusive must
// not call Get (the two locks would wait on each other).
func Get(t testing.TB) *Cluster {
	t.Helper()
	c := read(t)
	c.lock(t, syscall.LOCK_SH, "shared")
	return c
}

// Exclusive is Get with the harness's node to this test alone: it waits
// until no other package's test holds the cluster, and keeps others out
// until it ends. For tests that count the node's free GPUs, drain it or
// reserve it. Tests of one package run one after another, so the lock
// only orders packages.
func Exclusive(t testing.TB) *Cluster {
	t.Helper()
	c := read(t)
	c.lock(t, syscall.LOCK_EX, "exclusive")
	return c
}

// Multi is Exclusive for the multi-node cluster test/cluster/harness.sh
// starts (GPUSUITE_CLUSTER_ENV): a controller and GPU servers in their own
// namespaces. Its tests lose servers and cut them off /data, so each has
// the cluster alone.
func Multi(t testing.TB) *Cluster {
	t.Helper()
	c := readEnv(t, "GPUSUITE_CLUSTER_ENV", "test/cluster/harness.sh", "/run/gpusuite-cluster/env")
	c.lock(t, syscall.LOCK_EX, "exclusive")
	return c
}

// read reads the single-node harness's env file.
func read(t testing.TB) *Cluster {
	t.Helper()
	return readEnv(t, "GPUSUITE_SLURM_ENV", "test/slurm/harness.sh", "/run/gpusuite-slurm/env")
}

// readEnv reads the env file a harness wrote, named by the variable key.
func readEnv(t testing.TB, key, harness, example string) *Cluster {
	t.Helper()
	path := os.Getenv(key)
	if path == "" {
		if os.Getenv("GPUSUITE_REQUIRE_SLURM") == "1" {
			t.Fatalf("%s is unset: start the cluster with %s start (make test does)", key, harness)
		}
		t.Skipf("no test Slurm cluster: run 'make test', or %s start and %s=%s", harness, key, example)
	}
	return Open(t, path, harness)
}

// Open reads the env file at path that harness (the command that starts
// the cluster) wrote.
func Open(t testing.TB, path, harness string) *Cluster {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("open cluster env: %v (is the harness running?)", err)
	}
	defer f.Close()
	c := &Cluster{Vars: map[string]string{}}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			c.Vars[k] = v
		}
	}
	if c.Vars["SLURM_CONF"] == "" {
		t.Fatalf("%s has no SLURM_CONF", path)
	}
	if c.Vars["GPUSUITE_SLURM_DIR"] == "" {
		t.Fatalf("%s has no GPUSUITE_SLURM_DIR: restart the harness (%s stop; start)", path, harness)
	}
	return c
}

// lock takes <GPUSUITE_SLURM_DIR>/tests.lock (how: LOCK_SH or LOCK_EX)
// within LockWait, polling so that the wait is bounded, and releases it
// when the test ends.
func (c *Cluster) lock(t testing.TB, how int, word string) {
	t.Helper()
	path := filepath.Join(c.Vars["GPUSUITE_SLURM_DIR"], "tests.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatalf("open the harness's test lock: %v (is the harness running? test/slurm/harness.sh start)", err)
	}
	if err := flockWithin(f, how, LockWait); err != nil {
		f.Close()
		t.Fatalf("take the harness's test lock %s %s: %v: another package's test holds the cluster (one that drains the node or counts its GPUs holds it alone); see which with: fuser -v %s", word, path, err, path)
	}
	t.Cleanup(func() { f.Close() }) // closing the last descriptor releases the lock
}

// flockWithin takes the lock, trying again every 50 ms until wait has
// passed.
func flockWithin(f *os.File, how int, wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("still held after %s", wait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Env is the environment for Slurm client commands.
func (c *Cluster) Env() []string {
	env := os.Environ()
	for k, v := range c.Vars {
		env = append(env, k+"="+v)
	}
	return env
}

// Cmd builds a Slurm client command, run as user (empty for root).
func (c *Cluster) Cmd(ctx context.Context, user string, name string, args ...string) *exec.Cmd {
	if user != "" {
		args = append([]string{"-u", user, "--", "env", "SLURM_CONF=" + c.Vars["SLURM_CONF"], name}, args...)
		name = "runuser"
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = c.Env()
	cmd.Dir = os.TempDir()
	return cmd
}

// Run runs a client command and returns its stdout; failure fails the test.
func (c *Cluster) Run(t testing.TB, user, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := c.Cmd(ctx, user, name, args...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// Sbatch submits a batch job with --parsable and returns its id.
func (c *Cluster) Sbatch(t testing.TB, user string, args ...string) uint64 {
	t.Helper()
	out := c.Run(t, user, "sbatch", append([]string{"--parsable", "-o", "/dev/null"}, args...)...)
	id, _, _ := strings.Cut(strings.TrimSpace(out), ";")
	v, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		t.Fatalf("sbatch printed %q", out)
	}
	return v
}

// WaitGone waits until squeue no longer lists the job.
func (c *Cluster) WaitGone(t testing.TB, id uint64, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		out := c.Run(t, "", "squeue", "-h", "-j", strconv.FormatUint(id, 10), "-o", "%T")
		if strings.TrimSpace(out) == "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %d still queued or running after %s", id, timeout)
}

// WaitState waits until the job is in state (e.g. RUNNING).
func (c *Cluster) WaitState(t testing.TB, id uint64, state string, timeout time.Duration) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		last = strings.TrimSpace(c.Run(t, "", "squeue", "-h", "-j", strconv.FormatUint(id, 10), "-o", "%T"))
		if last == state {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("job %d is %q, not %s, after %s", id, last, state, timeout)
}

// EnsureUser creates a local user (no home) for jobs of several users.
func EnsureUser(t testing.TB, name string) {
	t.Helper()
	if exec.Command("id", "-u", name).Run() == nil {
		return
	}
	if out, err := exec.Command("useradd", "-M", "-s", "/bin/sh", name).CombinedOutput(); err != nil {
		if exec.Command("id", "-u", name).Run() != nil { // another package may have raced us
			t.Fatalf("useradd %s: %v: %s", name, err, out)
		}
	}
}

// Path returns a harness path, e.g. Path("GPUSUITE_SLURM_SPOOL").
func (c *Cluster) Path(key string) string {
	v := c.Vars[key]
	if v == "" {
		panic(fmt.Sprintf("harness env lacks %s", key))
	}
	return v
}

// Binary returns the path of one of gpusuite's programs (gpuacct, prolog,
// ...): $GPUSUITE_BIN/name when make test built it, else built here.
func Binary(t testing.TB, name string) string {
	t.Helper()
	if d := os.Getenv("GPUSUITE_BIN"); d != "" {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	p := filepath.Join(t.TempDir(), name)
	cmd := exec.Command("go", "build", "-o", p, "github.com/aicloud/gpusuite/"+name)
	cmd.Env = append(os.Environ(), "CGO_CFLAGS=-O2 -g -Wno-deprecated-declarations")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build %s: %v\n%s", name, err, out)
	}
	return p
}

// Accounted is one job as Slurm's own accounting (sacct -X) has it.
type Accounted struct {
	// JobIDRaw is the job's own id (an array task's too); JobID is how
	// sacct shows it (1234_7 for a task).
	JobIDRaw uint64
	JobID    string
	User     string
	Account  string
	// GPUs is the gres/gpu count of AllocTRES.
	GPUs       int
	ElapsedRaw int64
	Start, End time.Time
	// State is sacct's first word ("CANCELLED by 0" is CANCELLED).
	State    string
	ExitCode string
	// NodeList is sacct's host list ("gpu[1,3]"); Nodes the node=N of
	// AllocTRES.
	NodeList string
	Nodes    int
}

// GPUSeconds is what Slurm charges the job for gres/gpu.
func (a Accounted) GPUSeconds() int64 { return int64(a.GPUs) * a.ElapsedRaw }

// Sacct returns sacct -X's rows for the jobs (an array job's id gives
// every task). Times are in the local zone, as sacct prints them.
func (c *Cluster) Sacct(t testing.TB, ids ...uint64) []Accounted {
	t.Helper()
	return c.sacct(t, ids)
}

// SacctRuns is every run of the jobs (-D: a requeued job's earlier runs
// too), each job's in start order.
func (c *Cluster) SacctRuns(t testing.TB, ids ...uint64) []Accounted {
	t.Helper()
	runs := c.sacct(t, ids, "-D")
	slices.SortStableFunc(runs, func(a, b Accounted) int {
		if a.JobIDRaw != b.JobIDRaw {
			return cmp.Compare(a.JobIDRaw, b.JobIDRaw)
		}
		return a.Start.Compare(b.Start)
	})
	return runs
}

func (c *Cluster) sacct(t testing.TB, ids []uint64, flags ...string) []Accounted {
	t.Helper()
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatUint(id, 10)
	}
	args := append([]string{"-X", "-P", "-n", "-j", strings.Join(list, ","),
		"-o", "JobIDRaw,JobID,User,Account,AllocTRES,ElapsedRaw,Start,End,State,ExitCode,NodeList"}, flags...)
	out := c.Run(t, "", "sacct", args...)
	var rows []Accounted
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if line == "" {
			continue
		}
		f := strings.Split(line, "|")
		if len(f) != 11 {
			t.Fatalf("sacct line %q: want 11 fields", line)
		}
		a := Accounted{JobID: f[1], User: f[2], Account: f[3], ExitCode: f[9], NodeList: f[10]}
		a.State, _, _ = strings.Cut(f[8], " ")
		var err error
		if a.JobIDRaw, err = strconv.ParseUint(f[0], 10, 64); err != nil {
			t.Fatalf("sacct line %q: JobIDRaw: %v", line, err)
		}
		if a.ElapsedRaw, err = strconv.ParseInt(f[5], 10, 64); err != nil {
			t.Fatalf("sacct line %q: ElapsedRaw: %v", line, err)
		}
		for _, tres := range strings.Split(f[4], ",") {
			k, n, _ := strings.Cut(tres, "=")
			var dst *int
			switch k {
			case "gres/gpu":
				dst = &a.GPUs
			case "node":
				dst = &a.Nodes
			default:
				continue
			}
			if *dst, err = strconv.Atoi(n); err != nil {
				t.Fatalf("sacct line %q: AllocTRES: %v", line, err)
			}
		}
		// Unknown (not yet started or ended) stays the zero time.
		a.Start, _ = time.ParseInLocation("2006-01-02T15:04:05", f[6], time.Local)
		a.End, _ = time.ParseInLocation("2006-01-02T15:04:05", f[7], time.Local)
		rows = append(rows, a)
	}
	return rows
}

// WaitIdle waits until no job is pending, running, completing or
// suspended on the cluster.
func (c *Cluster) WaitIdle(t testing.TB, timeout time.Duration) {
	t.Helper()
	poll.Until(t, "no job left on the cluster", timeout, 250*time.Millisecond, func() (bool, string) {
		out := strings.TrimSpace(c.Run(t, "", "squeue", "-h", "-t", "PD,CF,R,CG,S", "-o", "%i %T %N"))
		return out == "", out
	})
}

// WaitAccounted waits until sacct has rows rows for the jobs, each
// finished and with its end, and returns them. An array job's tasks are
// a row each (rows 0 means one per id). slurmdbd hears of a job's end a
// little after the job ends, and of an array's tasks one by one.
func (c *Cluster) WaitAccounted(t testing.TB, timeout time.Duration, rows int, ids ...uint64) []Accounted {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		got := c.Sacct(t, ids...)
		missing := ""
		if rows == 0 {
			rows = len(ids)
		}
		if len(got) < rows {
			missing = fmt.Sprintf("sacct has %d of %d rows", len(got), rows)
		}
		seen := map[uint64]bool{}
		for _, r := range got {
			seen[r.JobIDRaw] = true
			if id, _, ok := strings.Cut(r.JobID, "_"); ok {
				if v, err := strconv.ParseUint(id, 10, 64); err == nil {
					seen[v] = true
				}
			}
			switch {
			case r.End.IsZero():
				missing = fmt.Sprintf("job %s has no end (%s)", r.JobID, r.State)
			case r.State == "RUNNING" || r.State == "PENDING" || r.State == "COMPLETING" || r.State == "REQUEUED":
				missing = fmt.Sprintf("job %s is %s", r.JobID, r.State)
			}
		}
		for _, id := range ids {
			if !seen[id] {
				missing = fmt.Sprintf("sacct does not know job %d", id)
			}
		}
		if missing == "" {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s, %s", timeout, missing)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// ClusterUtilization is sreport's gres/gpu cluster utilization of cluster
// in seconds, "allocated|down|planned down|idle|planned|reported", over
// whole hours: from the hour the cluster registered (the open cluster row
// of sacctmgr's events) to the end of this hour, rolled up now rather than
// at the next hour (sreport counts an hour rolled up early in full: its
// capacity runs to the hour's end). No job may run meanwhile.
func (c *Cluster) ClusterUtilization(t testing.TB, cluster string) (figures string, from, to time.Time) {
	t.Helper()
	const ts = "2006-01-02T15:04:05"
	now := time.Now()
	events := c.Run(t, "", "sacctmgr", "-P", "-n", "show", "event", "cluster="+cluster, "Start="+now.Add(-48*time.Hour).Format(ts), "End="+now.Format(ts), "Format=NodeName,Start,End")
	var registered time.Time
	for _, line := range strings.Split(strings.TrimSpace(events), "\n") {
		f := strings.Split(line, "|")
		if len(f) == 3 && f[0] == "" && f[2] == "Unknown" {
			if at, err := time.ParseInLocation(ts, f[1], time.Local); err == nil {
				registered = at
			}
		}
	}
	if registered.IsZero() {
		t.Fatalf("sacctmgr lists no open cluster row of %s:\n%s", cluster, events)
	}
	from = registered.Truncate(time.Hour)
	to = now.Truncate(time.Hour).Add(time.Hour)
	c.Run(t, "", "sacctmgr", "-i", "rollup", from.Format(ts), to.Format(ts))
	out := strings.TrimSpace(c.Run(t, "", "sreport", "-t", "seconds", "-T", "gres/gpu", "-P", "-n", "cluster", "utilization",
		"cluster="+cluster, "start="+from.Format(ts), "end="+to.Format(ts)))
	f := strings.Split(out, "|")
	if len(f) != 8 || f[0] != cluster || f[1] != "gres/gpu" {
		t.Fatalf("sreport cluster utilization: %q, want %s|gres/gpu and six figures", out, cluster)
	}
	return strings.Join(f[2:], "|"), from, to
}
