package slurm_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/chromedp/chromedp"
	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/agent"
	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/notes"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/browser"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
	"github.com/aicloud/gpusuite/internal/web"
)

// agentInterval is the agent's cycle here, and Slurm's re-read.
const agentInterval = time.Second

// The board's promise (issue #12): a change on a node reaches the
// browser within 2 agent intervals + 1 s after the agent sees it. The
// test logs the span it measured against this bound (docs/performance.md
// quotes it) but does not assert it: on a loaded 2-core machine the
// agent's cycle, scontrol and Chromium each wait for a core, and a test
// whose verdict depends on the machine's speed fails for no bug.
const boardBound = 2*agentInterval + time.Second

// boardCeiling is what the test does assert: the new job's cell turns
// busy in the open page, without a reload, within this long of its
// prolog. Far above boardBound, it still fails a page that misses the
// event and waits for a refresh or for nothing.
const boardCeiling = 60 * time.Second

// owners is the agent's Owner: which job a process belongs to, set by
// the test (the harness's proctrack/linuxproc gives no job cgroups).
type owners struct {
	mu   sync.Mutex
	jobs map[uint32]uint64
}

func (o *owners) set(pid uint32, job uint64) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.jobs[pid] = job
}

// owner is 0 (no job: foreign) for a process the test did not map.
func (o *owners) owner(pid uint32) (uint64, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.jobs[pid], nil
}

// readyNotifier tells the test when the agent serves its socket.
type readyNotifier struct {
	once  sync.Once
	ready chan struct{}
}

func (n *readyNotifier) Notify(state string) {
	if state == "READY=1" {
		n.once.Do(func() { close(n.ready) })
	}
}

func (n *readyNotifier) WatchdogInterval() time.Duration { return 0 }

// process starts `sleep` as user, a stand-in for a GPU program, killed
// when the test ends.
func process(t *testing.T, name string) uint32 {
	t.Helper()
	u, err := user.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.ParseUint(u.Uid, 10, 32)
	gid, _ := strconv.ParseUint(u.Gid, 10, 32)
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start a process as %s: %v", name, err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return uint32(cmd.Process.Pid)
}

// working is a GPU program's load: util percent and mem MiB, all of it
// of the process pid.
func working(util uint32, mem uint64, pid uint32) sim.Workload {
	return sim.Constant(sim.Load{GPUUtil: util, MemUtil: util / 2, MemUsedMiB: mem, PowerMW: 150000 + 4000*util,
		TempC: 60, SMClockMHz: 1980, Procs: []nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: mem << 20}}})
}

// e2e is the running board: agent, source, web handler and browser.
type e2e struct {
	c      *slurm.Cluster
	node   string
	srv    *sim.Server
	owners *owners
	url    string
	live   string
	agLog  *logs.Buffer
	// index of each simulated GPU by UUID
	index map[string]int
	ctx   context.Context // the browser's
	shots string
	// cfgPath is gpuacct's config (ledger, live dir); noteID the booking's
	cfgPath string
	noteID  int64
}

// TestBoardEndToEnd: the live board on the real Slurm of the harness,
// alone on its node. An agent on simulated GPUs like the node's hears the
// real prolog; real jobs of alice and bob, one GPU working and one held
// idle, a stray process of bob's on a free GPU and a booking made with
// gpuacct note add read busy, idle, foreign and booked in the JSON API
// and in headless Chromium, whose tooltip on focus shows the job's user
// and its process's memory; gpuacct check reports the stray process. A
// reservation made with scontrol turns the free GPU reserved, a drain
// turns the unallocated GPUs drained with the reason on the page, and a
// job started while the page is open turns its free cell busy without a
// reload (its span against issue #12's bound is logged, boardBound).
func TestBoardEndToEnd(t *testing.T) {
	c := slurm.Exclusive(t)
	browser.Require(t)
	hookCfg, err := config.Load(c.Path("GPUSUITE_SLURM_HOOK_CONFIG"), true)
	if err != nil {
		t.Fatal(err)
	}
	node := c.Path("GPUSUITE_SLURM_NODE")
	dropLeftovers(t, c, node)
	slurm.EnsureUser(t, "alice")
	slurm.EnsureUser(t, "bob")
	// A job of an earlier test of this package would take a GPU the
	// board is expected to show free.
	poll.Until(t, "node "+node+" without jobs", 2*time.Minute, 200*time.Millisecond, func() (bool, string) {
		out := strings.TrimSpace(c.Run(t, "", "squeue", "-h", "-w", node, "-o", "%i %T"))
		return out == "", out
	})
	e := startBoard(t, c, hookCfg, node)

	// Undo Slurm's changes whatever fails; the jobs go before the lock.
	// A run killed before its cleanup leaves them: dropLeftovers undoes
	// them at the next run's start, and harness.sh start too.
	resv := fmt.Sprintf("%s%d", resvPrefix, os.Getpid())
	var jobs []uint64
	t.Cleanup(func() {
		quietly(c, "delete", "reservation="+resv)
		quietly(c, "update", "nodename="+node, "state=resume")
		cancelJobs(c, jobs)
	})

	// Two jobs: alice's works, bob's holds its GPU idle.
	jobA := c.Sbatch(t, "alice", "-A", "team-a", "--gres=gpu:1", "--wrap", "sleep 300")
	jobs = append(jobs, jobA)
	jobB := c.Sbatch(t, "bob", "-A", "team-b", "--gres=gpu:1", "--wrap", "sleep 300")
	jobs = append(jobs, jobB)
	gpuA := e.gpuOf(t, waitEvent(t, c, jobA, record.JobStart, 60*time.Second))
	gpuB := e.gpuOf(t, waitEvent(t, c, jobB, record.JobStart, 60*time.Second))
	var free []int
	for i := range e.srv.Count() {
		if i != gpuA && i != gpuB {
			free = append(free, i)
		}
	}
	gpuC, gpuD := free[0], free[1]
	const memA = 20480 // MiB, 20 GiB
	pidA := process(t, "alice")
	e.owners.set(pidA, jobA)
	e.srv.Device(gpuA).SetWorkload(working(80, memA, pidA))
	// bob's stray program, of no job, on a GPU no job holds: foreign
	stray := process(t, "bob")
	e.srv.Device(gpuC).SetWorkload(working(35, 8192, stray))
	// a booking on the last free GPU
	e.note(t, gpuD)

	phase1 := map[board.State]int{board.Busy: 1, board.Idle: 1, board.Foreign: 1, board.Booked: 1}
	e.waitStates(t, "two jobs, a stray process, a booking", phase1, map[int]board.State{
		gpuA: board.Busy, gpuB: board.Idle, gpuC: board.Foreign, gpuD: board.Booked})
	doc := e.status(t)
	if got := doc.Totals; got.Free != 0 || got.IdleAllocated != 1 || got.Booked != 1 || got.RunningJobs != 2 {
		t.Errorf("totals %+v: want 0 free, 1 idle, 1 booked, 2 running jobs", got)
	}
	e.checkBusyCell(t, gpuA, jobA, "alice", memA, pidA)
	e.shot(t, "board-e2e.png") // docs/board-e2e.png: the busy GPU's tooltip open
	e.checkForeignCell(t, gpuC, stray, "bob")
	e.shot(t, "board-e2e-foreign.png")
	if _, err := chromedp.Run(e.ctx, chromedp.Evaluate[bool](`document.activeElement.blur(), true`)); err != nil {
		t.Fatal(err) // later screenshots without the tooltip
	}
	e.checkCommand(t, gpuC, stray, "bob")

	// The stray process ends; a reservation makes the free GPU reserved
	// (the booked one stays booked), a drain makes both drained.
	e.srv.Device(gpuC).SetWorkload(nil)
	c.Run(t, "", "scontrol", "create", "reservation", "reservationname="+resv, "starttime=now", "duration=10",
		"nodes="+node, "users=root", "flags=ignore_jobs")
	e.waitStates(t, "reservation", map[board.State]int{board.Busy: 1, board.Idle: 1, board.Reserved: 1, board.Booked: 1},
		map[int]board.State{gpuC: board.Reserved, gpuD: board.Booked})
	if got := e.status(t).Totals; got.Free != 0 || got.FreeReserved != 1 {
		t.Errorf("under the reservation: %d free, %d reserved; want 0 and 1", got.Free, got.FreeReserved)
	}
	// A reserved GPU is not free, wherever it is counted.
	e.freeAgree(t, "reservation", 0)
	e.shot(t, "board-e2e-reserved.png")
	c.Run(t, "", "scontrol", "update", "nodename="+node, "state=drain", "reason="+drainReason)
	e.waitStates(t, "drain", map[board.State]int{board.Busy: 1, board.Idle: 1, board.Drained: 2},
		map[int]board.State{gpuA: board.Busy, gpuB: board.Idle, gpuC: board.Drained, gpuD: board.Drained})
	if txt := e.text(t, "#board .node .nodehead"); !strings.Contains(txt, drainReason) {
		t.Errorf("drained node's heading %q lacks the reason %q", txt, drainReason)
	}
	e.shot(t, "board-e2e-drained.png")
	c.Run(t, "", "scontrol", "delete", "reservation="+resv)
	c.Run(t, "", "scontrol", "update", "nodename="+node, "state=resume")
	e.waitStates(t, "drain and reservation undone", map[board.State]int{board.Busy: 1, board.Idle: 1, board.Free: 1, board.Booked: 1},
		map[int]board.State{gpuC: board.Free, gpuD: board.Booked})
	e.freeAgree(t, "drain and reservation undone", 1)

	// A new job while the page is open: its cell turns busy without a
	// reload. The booking is lifted first, so that wherever Slurm puts
	// the job, it lands on a cell the board shows free.
	e.unnote(t)
	e.waitStates(t, "booking lifted", map[board.State]int{board.Busy: 1, board.Idle: 1, board.Free: 2}, nil)
	if _, err := chromedp.Run(e.ctx, chromedp.Evaluate[bool](`window.__e2eNoReload = true`)); err != nil {
		t.Fatal(err)
	}
	pidN := process(t, "alice")
	jobN := c.Sbatch(t, "alice", "-A", "team-a", "--gres=gpu:1", "--wrap", "sleep 300")
	jobs = append(jobs, jobN)
	e.owners.set(pidN, jobN)
	startN := waitEvent(t, c, jobN, record.JobStart, 60*time.Second)
	gpuN := e.gpuOf(t, startN)
	e.srv.Device(gpuN).SetWorkload(working(90, 30720, pidN))
	var left, busy time.Time
	cell := fmt.Sprintf("#gpu-%s-%d", node, gpuN)
	poll.Until(t, "new job's cell busy", boardCeiling, 100*time.Millisecond, func() (bool, string) {
		w := e.cellWord(t, cell)
		if w != string(board.Free) && left.IsZero() {
			left = time.Now()
		}
		if w == string(board.Busy) {
			busy = time.Now()
			return true, w
		}
		return false, "cell reads " + w
	})
	if kept, err := chromedp.Run(e.ctx, chromedp.Evaluate[bool](`window.__e2eNoReload === true`)); err != nil || !kept {
		t.Errorf("the page was reloaded (or unreadable: %v) while it should update itself", err)
	}
	t.Logf("job %d's start (prolog %s) reached the page: cell %s left free after %s, read busy after %s (bound %s, not asserted)",
		jobN, startN.Time.Format(time.RFC3339Nano), cell, left.Sub(startN.Time).Round(time.Millisecond),
		busy.Sub(startN.Time).Round(time.Millisecond), boardBound)
	if d := busy.Sub(startN.Time); d > boardCeiling {
		t.Errorf("job %d's cell read busy %s after its prolog: more than %s", jobN, d.Round(time.Millisecond), boardCeiling)
	}
	e.shot(t, "board-e2e-newjob.png")
}

// resvPrefix starts the name of the reservation this test makes; the pid
// follows. test/slurm/harness.sh deletes board-e2e-* at start.
const resvPrefix = "board-e2e-"

// drainReason is the reason of this test's drain.
const drainReason = "board e2e"

// dropLeftovers undoes what an earlier run of this test, killed before
// its cleanup, left in Slurm: its reservation (10 minutes long: the GPUs
// would read reserved, not free) and its drain.
func dropLeftovers(t *testing.T, c *slurm.Cluster, node string) {
	t.Helper()
	for _, name := range leftoverReservations(c.Run(t, "", "scontrol", "-o", "show", "reservation")) {
		t.Logf("deleting reservation %s, left by an earlier run", name)
		c.Run(t, "", "scontrol", "delete", "reservation="+name)
	}
	if reason := strings.TrimSpace(c.Run(t, "", "sinfo", "-h", "-N", "-n", node, "-o", "%E")); reason == drainReason {
		t.Logf("resuming %s, drained by an earlier run", node)
		c.Run(t, "", "scontrol", "update", "nodename="+node, "state=resume")
	}
}

// leftoverReservations picks this test's reservations out of
// `scontrol -o show reservation` (one per line, or "No reservations in
// the system").
func leftoverReservations(out string) []string {
	var names []string
	for _, line := range strings.Split(out, "\n") {
		for _, f := range strings.Fields(line) {
			if name, ok := strings.CutPrefix(f, "ReservationName="); ok && strings.HasPrefix(name, resvPrefix) {
				names = append(names, name)
			}
		}
	}
	return names
}

// cancelJobs cancels the jobs and waits a bounded time until Slurm has
// let them go, so that the next test finds the node empty; for cleanup,
// where a failure is no test failure.
func cancelJobs(c *slurm.Cluster, ids []uint64) {
	if len(ids) == 0 {
		return
	}
	list := make([]string, len(ids))
	for i, id := range ids {
		list[i] = strconv.FormatUint(id, 10)
	}
	ctx, stop := context.WithTimeout(context.Background(), time.Minute)
	defer stop()
	_ = c.Cmd(ctx, "", "scancel", list...).Run()
	for ctx.Err() == nil {
		out, err := c.Cmd(ctx, "", "squeue", "-h", "-j", strings.Join(list, ","), "-o", "%i").Output()
		if err == nil && strings.TrimSpace(string(out)) == "" {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// startBoard starts the agent on simulated GPUs like the harness node's
// (the prolog announces jobs on its socket), the board source over its
// live directory, the real scontrol and a ledger's notes, the web handler
// and a headless Chromium on the board page.
func startBoard(t *testing.T, c *slurm.Cluster, hookCfg config.Config, node string) *e2e {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	root := t.TempDir()
	e := &e2e{c: c, node: node, owners: &owners{jobs: map[uint32]uint64{}}, live: filepath.Join(root, "live"),
		agLog: &logs.Buffer{}, index: map[string]int{}}
	for _, d := range []string{e.live, filepath.Join(root, "incoming")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	sc := hookCfg.GPU.Simulated
	srv, err := sim.New(sim.Options{Node: node, Count: sc.Count, Model: sc.Model, Minors: sc.Minors})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = srv
	for i := range srv.Count() {
		e.index[sim.UUID(node, i)] = i
	}
	lib, err := gpu.OpenInterface(ctx, srv, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}

	// The agent: its own spool (it must not ship the harness's events
	// away from other tests), the socket where the prolog announces.
	cfg := config.Default()
	cfg.Cluster.Name, cfg.Cluster.Node = hookCfg.Cluster.Name, node
	cfg.Spool.Dir = filepath.Join(root, "spool")
	cfg.Agent.StateDir = filepath.Join(root, "state")
	cfg.Agent.IncomingDir = filepath.Join(root, "incoming")
	cfg.Agent.LiveDir = e.live
	cfg.Agent.Interval = config.Dur(agentInterval)
	cfg.Agent.MetricsListen = ""
	log := slog.New(slog.NewTextHandler(e.agLog, &slog.HandlerOptions{Level: slog.LevelDebug}))
	a, err := agent.New(cfg, cfg.Cluster.Name, node, agent.Deps{Lib: lib, Log: log, Owner: e.owners.owner})
	if err != nil {
		t.Fatal(err)
	}
	sock := hookCfg.Agent.SocketPath(c.Path("GPUSUITE_SLURM_SPOOL"))
	n := &readyNotifier{ready: make(chan struct{})}
	agentDone := make(chan error, 1)
	go func() { agentDone <- a.Run(ctx, sock, "", n) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-agentDone:
			if err != nil {
				t.Errorf("agent: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("agent still running 30 s after its stop")
		}
		lib.Close()
		if t.Failed() {
			t.Logf("agent log:\n%s", tail(e.agLog.String(), 6000))
		}
	})
	select {
	case <-n.ready:
	case err := <-agentDone:
		t.Fatalf("agent: %v\n%s", err, e.agLog.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("agent not ready after 60 s\n%s", e.agLog.String())
	}

	// The ledger of the notes (made here, written by gpuacct note add and
	// rm, read by the board), gpuacct's config, and the board's source.
	ledger := filepath.Join(root, "ledger.db")
	st, err := store.Open(ctx, store.Options{Path: ledger})
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if st, err = store.Open(ctx, store.Options{Path: ledger, ReadOnly: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	e.cfgPath = filepath.Join(root, "gpuacct.toml")
	cfgText := fmt.Sprintf("[cluster]\nname = %q\n\n[store]\npath = %q\n\n[report]\nrequests = %q\n\n[board]\nlive_dir = %q\n",
		hookCfg.Cluster.Name, ledger, filepath.Join(root, "requests"), e.live)
	if err := os.WriteFile(e.cfgPath, []byte(cfgText), 0o644); err != nil {
		t.Fatal(err)
	}
	src := board.NewSource(board.SourceOptions{
		LiveDir:       e.live,
		Cluster:       hookCfg.Cluster.Name,
		Slurm:         slurmstate.Reader{Run: slurmstate.Exec{Env: c.Env()}.Run, Timeout: 10 * time.Second}.Read,
		SlurmInterval: agentInterval,
		Notes:         notes.InForce(st),
	})
	go src.Run(ctx)
	h, err := web.New(web.Options{DB: ledger, Board: src, Location: time.Local, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(h)
	t.Cleanup(func() { hs.Close(); h.Close() })
	e.url = hs.URL

	// The browser.
	e.shots = browser.ShotDir(t)
	e.ctx = browser.NewBrowser(t, 1280, 1100)
	if err := chromedp.Do(e.ctx, chromedp.Navigate(e.url+"/"), chromedp.WaitVisible("#board")); err != nil {
		t.Fatalf("open the board page: %v", err)
	}
	return e
}

// gpuOf is the simulated GPU index of a job's one GPU, from its start
// event.
func (e *e2e) gpuOf(t *testing.T, ev record.Event) int {
	t.Helper()
	if len(ev.GPUs) != 1 {
		t.Fatalf("job %d: prolog recorded %d GPUs, want 1", ev.Job.ID, len(ev.GPUs))
	}
	i, ok := e.index[ev.GPUs[0].UUID]
	if !ok {
		t.Fatalf("job %d's GPU %s is none of the simulated node's", ev.Job.ID, ev.GPUs[0].UUID)
	}
	return i
}

// gpuacct runs bin/gpuacct with the test's config and returns its
// output and exit code.
func (e *e2e) gpuacct(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, slurm.Binary(t, "gpuacct"), append([]string{"--config", e.cfgPath}, args...)...)
	cmd.Env = e.c.Env()
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exit):
		return string(out), exit.ExitCode()
	}
	t.Fatalf("gpuacct %s: %v\n%s", strings.Join(args, " "), err, out)
	return "", 0
}

// note books GPU index for an hour with gpuacct note add.
func (e *e2e) note(t *testing.T, index int) {
	t.Helper()
	target := fmt.Sprintf("%s:%d", e.node, index)
	out, code := e.gpuacct(t, "note", "add", target, "--until", "1h", "--text", "kept for the board e2e demo")
	var id int64
	if _, err := fmt.Sscanf(out, "note %d on "+target, &id); code != 0 || err != nil {
		t.Fatalf("gpuacct note add %s: exit %d, %v:\n%s", target, code, err, out)
	}
	e.noteID = id
}

// unnote removes the booking with gpuacct note rm.
func (e *e2e) unnote(t *testing.T) {
	t.Helper()
	id := strconv.FormatInt(e.noteID, 10)
	if out, code := e.gpuacct(t, "note", "rm", id); code != 0 {
		t.Fatalf("gpuacct note rm %s: exit %d:\n%s", id, code, out)
	}
}

// status reads GET /api/v1/board.
func (e *e2e) status(t *testing.T) board.StatusDoc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, e.url+"/api/v1/board", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /api/v1/board: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/board: %d %v\n%s", resp.StatusCode, err, body)
	}
	var doc board.StatusDoc
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatalf("GET /api/v1/board: %v\n%s", err, body)
	}
	return doc
}

// jsonStates are the document's counts by state and the node's GPUs'
// states by index.
func (e *e2e) jsonStates(t *testing.T) (map[board.State]int, map[int]board.State) {
	t.Helper()
	doc := e.status(t)
	cells := map[int]board.State{}
	for _, n := range doc.Nodes {
		if n.Name != e.node {
			continue
		}
		for _, g := range n.GPUs {
			cells[g.Index] = g.State
		}
	}
	counts := map[board.State]int{}
	for s, n := range doc.Totals.States {
		if n > 0 {
			counts[s] = n
		}
	}
	return counts, cells
}

// domCounts counts the page's GPU cells by the state word they read.
const domCounts = `(() => {
  const m = {};
  document.querySelectorAll('#board .cells .gpu .st').forEach(e => {
    const w = e.textContent.trim().split(/\s+/).pop();
    m[w] = (m[w] || 0) + 1;
  });
  return m;
})()`

// cellWord is the state word a cell reads ("" when it is not there).
func (e *e2e) cellWord(t *testing.T, sel string) string {
	t.Helper()
	js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.textContent.trim().split(/\s+/).pop() : ""; })()`, sel+" .st")
	w, err := chromedp.Run(e.ctx, chromedp.Evaluate[string](js))
	if err != nil {
		t.Fatalf("read cell %s: %v", sel, err)
	}
	return w
}

// text is an element's text on the page.
func (e *e2e) text(t *testing.T, sel string) string {
	t.Helper()
	s, err := chromedp.Run(e.ctx, chromedp.TextContent(sel))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return s
}

// waitStates waits until the JSON API and the open page (updated by its
// own events, never reloaded) both show counts of each state and the
// GPUs of cells in theirs.
func (e *e2e) waitStates(t *testing.T, what string, counts map[board.State]int, cells map[int]board.State) {
	t.Helper()
	poll.Until(t, what, 30*time.Second, 200*time.Millisecond, func() (bool, string) {
		jc, jcells := e.jsonStates(t)
		if d := cmp.Diff(counts, jc); d != "" {
			return false, "API counts (-want +got):\n" + d
		}
		for i, s := range cells {
			if jcells[i] != s {
				return false, fmt.Sprintf("API has GPU %d %s, want %s", i, jcells[i], s)
			}
		}
		dom, err := chromedp.Run(e.ctx, chromedp.Evaluate[map[string]int](domCounts))
		if err != nil {
			return false, fmt.Sprintf("count the page's cells: %v", err)
		}
		want := map[string]int{}
		for s, n := range counts {
			want[string(s)] = n
		}
		if d := cmp.Diff(want, dom); d != "" {
			return false, "page counts (-want +got):\n" + d
		}
		for i, s := range cells {
			if w := e.cellWord(t, fmt.Sprintf("#gpu-%s-%d", e.node, i)); w != string(s) {
				return false, fmt.Sprintf("page cell of GPU %d reads %q, want %s", i, w, s)
			}
		}
		return true, ""
	})
}

// focusTip focuses a cell as the keyboard does and returns its tooltip's
// text once the tooltip shows.
func (e *e2e) focusTip(t *testing.T, sel string) string {
	t.Helper()
	var tip string
	// The page swaps its board in at each event, which may take the
	// focus away: focus again until the tooltip is seen.
	poll.Until(t, "tooltip of "+sel+" shown on focus", 20*time.Second, 100*time.Millisecond, func() (bool, string) {
		js := fmt.Sprintf(`(() => {
  const c = document.querySelector(%q);
  if (!c) return "";
  const tip = c.querySelector('.tip');
  const shown = () => { const r = tip.getBoundingClientRect(); return getComputedStyle(tip).display !== 'none' && r.width > 0 && r.height > 0; };
  if (document.activeElement) document.activeElement.blur();
  if (shown()) return "SHOWN-UNFOCUSED";
  c.focus();
  return document.activeElement === c && shown() ? tip.innerText : "";
})()`, sel)
		s, err := chromedp.Run(e.ctx, chromedp.Evaluate[string](js))
		if err != nil {
			return false, err.Error()
		}
		if s == "SHOWN-UNFOCUSED" {
			t.Fatalf("the tooltip of %s shows without focus or hover", sel)
		}
		tip = s
		return s != "", "tooltip hidden"
	})
	return tip
}

// checkBusyCell: focus on the busy GPU shows its job, the job's user and
// the process with its user and memory, as the API has them.
func (e *e2e) checkBusyCell(t *testing.T, index int, job uint64, user string, memMiB uint64, pid uint32) {
	t.Helper()
	sel := fmt.Sprintf("#gpu-%s-%d", e.node, index)
	tip := e.focusTip(t, sel)
	if !strings.Contains(tip, "job "+strconv.FormatUint(job, 10)) || !strings.Contains(tip, "user "+user) {
		t.Errorf("busy GPU %d's tooltip lacks job %d of user %s:\n%s", index, job, user, tip)
	}
	// the process's row: pid and its command (the agent read "sleep" from
	// /proc), user, job, memory as the page writes GiB
	row := ""
	for _, l := range strings.Split(tip, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), strconv.FormatUint(uint64(pid), 10)) {
			row = l
		}
	}
	mem := strconv.FormatFloat(float64(memMiB)/1024, 'f', 1, 64) + " GiB"
	if f := strings.Fields(row); len(f) < 5 || f[1] != "sleep" || f[2] != user || f[3] != strconv.FormatUint(job, 10) || !strings.Contains(row, mem) {
		t.Errorf("busy GPU %d's tooltip: process row %q; want process %d (sleep) of %s in job %d with %s:\n%s", index, row, pid, user, job, mem, tip)
	}
	doc := e.status(t)
	for _, n := range doc.Nodes {
		for _, g := range n.GPUs {
			if g.Index != index {
				continue
			}
			if len(g.Jobs) != 1 || g.Jobs[0].Job != job || g.Jobs[0].User != user || len(g.Procs) != 1 ||
				g.Procs[0].PID != pid || g.Procs[0].User != user || g.Procs[0].MemUsedMiB != memMiB || g.Procs[0].Job != job {
				t.Errorf("API GPU %d: jobs %+v procs %+v; want job %d of %s, process %d of %s with %d MiB", index, g.Jobs, g.Procs, job, user, pid, user, memMiB)
			}
		}
	}
}

// checkForeignCell: the stray process is flagged in the cell's tooltip.
func (e *e2e) checkForeignCell(t *testing.T, index int, pid uint32, user string) {
	t.Helper()
	tip := e.focusTip(t, fmt.Sprintf("#gpu-%s-%d", e.node, index))
	row := ""
	for _, l := range strings.Split(tip, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), strconv.FormatUint(uint64(pid), 10)) {
			row = l
		}
	}
	if f := strings.Fields(row); len(f) < 3 || f[1] != "sleep" || f[2] != user || !strings.Contains(row, "foreign") {
		t.Errorf("foreign GPU %d's tooltip: process row %q; want %s's process %d (sleep) flagged foreign:\n%s", index, row, user, pid, tip)
	}
}

// checkCommand: gpuacct check, on the same live directory and the real
// Slurm, reports the foreign process and exits non-zero.
func (e *e2e) checkCommand(t *testing.T, index int, pid uint32, user string) {
	t.Helper()
	out, code := e.gpuacct(t, "check")
	if code == 0 {
		t.Errorf("gpuacct check with a foreign process exits 0, want non-zero:\n%s", out)
	}
	// one problem line names the node, the GPU, the process and its user
	line := ""
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "process "+strconv.FormatUint(uint64(pid), 10)) {
			line = l
		}
	}
	if !strings.Contains(line, e.node+" GPU "+strconv.Itoa(index)) || !strings.Contains(line, user) {
		t.Errorf("gpuacct check does not report %s's process %d on %s GPU %d:\n%s", user, pid, e.node, index, out)
	}
}

// shot saves a screenshot of the page under the screenshot directory.
func (e *e2e) shot(t *testing.T, name string) {
	t.Helper()
	browser.Shot(t, e.ctx, e.shots, name)
}

// TestLeftoverReservations needs no cluster: which reservations of
// scontrol's listing a new run deletes.
func TestLeftoverReservations(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		want      []string
	}{
		{"none", "No reservations in the system\n", nil},
		{"ours and another", "ReservationName=board-e2e-4242 StartTime=2026-11-26T07:00:00 Nodes=node1 Flags=IGNORE_JOBS\n" +
			"ReservationName=maint StartTime=2026-11-26T08:00:00 Nodes=node1\n" +
			"ReservationName=board-e2e-17 StartTime=2026-11-26T07:05:00 Nodes=node1\n", []string{"board-e2e-4242", "board-e2e-17"}},
		{"prefix elsewhere only", "ReservationName=keep Users=board-e2e-1\n", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, leftoverReservations(tc.out)); diff != "" {
				t.Errorf("leftoverReservations (-want +got):\n%s", diff)
			}
		})
	}
}
