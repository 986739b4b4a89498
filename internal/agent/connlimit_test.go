package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/testkit/reexec"
)

// floodEnv makes the test binary the flooder (TestSocketFlood's child):
// it opens floodCountEnv idle connections to the socket it names.
const (
	floodEnv      = "GPUSUITE_TEST_FLOOD_SOCKET"
	floodCountEnv = "GPUSUITE_TEST_FLOOD_COUNT"
)

func TestMain(m *testing.M) {
	if p := os.Getenv(floodEnv); p != "" {
		os.Exit(flood(p))
	}
	os.Exit(m.Run())
}

// flood opens up to $floodCountEnv connections to path and sends nothing
// on them; it prints how many it holds, then holds them until stdin
// closes.
func flood(path string) int {
	want, err := strconv.Atoi(os.Getenv(floodCountEnv))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var conns []net.Conn
	deadline := time.Now().Add(30 * time.Second)
	for len(conns) < want && time.Now().Before(deadline) {
		c, err := net.DialTimeout("unix", path, 5*time.Second)
		if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
			break // the flooder's own limit: what it holds is the flood
		}
		if err != nil {
			// a full backlog (EAGAIN) while the agent accepts: retry
			time.Sleep(time.Millisecond)
			continue
		}
		conns = append(conns, c)
	}
	fmt.Println(len(conns))
	_, _ = io.Copy(io.Discard, os.Stdin)
	return 0
}

func TestConnLimits(t *testing.T) {
	type step struct {
		acquire bool // else release
		uid     uint32
		want    bool
	}
	for _, tc := range []struct {
		name          string
		total, perUID int
		steps         []step
		wantOpen      int
	}{
		{"per uid cap leaves room for others", 4, 2, []step{
			{true, 7, true}, {true, 7, true}, {true, 7, false}, {true, 8, true}, {true, 0, true}, {true, 9, false},
		}, 4},
		{"a release frees the uid's slot", 4, 1, []step{
			{true, 7, true}, {true, 7, false}, {false, 7, true}, {true, 7, true},
		}, 1},
		{"per uid above the total is the total", 2, 8, []step{
			{true, 7, true}, {true, 7, true}, {true, 7, false}, {true, 0, false},
		}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newConnLimits(tc.total, tc.perUID)
			for i, s := range tc.steps {
				if !s.acquire {
					l.release(s.uid)
					continue
				}
				if got := l.acquire(s.uid); got != s.want {
					t.Errorf("step %d: acquire(%d) = %v, want %v", i, s.uid, got, s.want)
				}
			}
			if got := l.inUse(); got != tc.wantOpen {
				t.Errorf("open %d, want %d", got, tc.wantOpen)
			}
		})
	}
}

// inUse is the number of open connections, of uid when one is given.
func (l *connLimits) inUse(uid ...uint32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(uid) > 0 {
		return l.byUID[uid[0]]
	}
	return l.open
}

// The sockets together never take more than a quarter of the descriptors.
func TestSocketCaps(t *testing.T) {
	for _, tc := range []struct {
		nofile        uint64
		hook, profile int
	}{
		{1 << 20, hookConns, profileConns},
		{1024, hookConns, profileConns},
		{256, 42, 21},
		{16, 2, 1},
	} {
		t.Run(strconv.FormatUint(tc.nofile, 10), func(t *testing.T) {
			h, p := socketCaps(tc.nofile)
			if diff := cmp.Diff([2]int{tc.hook, tc.profile}, [2]int{h, p}); diff != "" {
				t.Errorf("socketCaps(%d) (-want +got):\n%s", tc.nofile, diff)
			}
		})
	}
}

// TestSocketFlood: an ordinary user (nobody, when the test runs as root)
// holds thousands of idle connections to the 0666 profile socket. The
// agent holds at most that user's cap of them, so its descriptors stay
// bounded; the hook socket answers; another user's profile request is
// judged, not turned away; once the flood ends its descriptors are back.
func TestSocketFlood(t *testing.T) {
	const floodConns = 5000
	root := t.TempDir()
	bin, flooder := floodBinary(t, root)
	cfg := testConfig(root)
	r := startRunningWith(t, cfg)
	base, baseG, baseRSS := openFDs(t), runtime.NumGoroutine(), vmRSS(t)

	cmd := exec.Command(bin, "-test.run=^$")
	cmd.Env = append(os.Environ(), floodEnv+"="+cfg.Agent.ProfileSocket, floodCountEnv+"="+strconv.Itoa(floodConns))
	if flooder != 0 && os.Geteuid() == 0 {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: flooder, Gid: flooder}}
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}

	// the peaks while the flood is on: the agent's descriptors and the
	// flooder's connections it holds
	stop := make(chan struct{})
	// (goroutines: each connection served holds one, with its buffers)
	var peakFDs, peakHeld, peakG int
	var watched sync.WaitGroup
	watched.Add(1)
	go func() {
		defer watched.Done()
		tick := time.NewTicker(5 * time.Millisecond)
		defer tick.Stop()
		for {
			if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
				peakFDs = max(peakFDs, len(fds))
			}
			peakHeld = max(peakHeld, r.a.profLim.inUse(flooder))
			peakG = max(peakG, runtime.NumGoroutine())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ended := false
	endFlood := func() {
		if !ended {
			ended = true
			stdin.Close()
			_ = cmd.Wait()
		}
	}
	t.Cleanup(endFlood)
	held := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadString('\n')
		held <- strings.TrimSpace(line)
	}()
	var n int
	select {
	case line := <-held:
		if n, err = strconv.Atoi(line); err != nil {
			t.Fatalf("flooder said %q: %v (stderr %q)", line, err, stderr.String())
		}
	case <-time.After(settled):
		t.Fatal("flooder did not report its connections")
	}
	// over 1,024 (a common descriptor limit) even on a box that allows
	// the flooder fewer than asked
	if n < 1500 {
		t.Fatalf("flooder holds %d connections, want at least 1500", n)
	}

	ctx := context.Background()
	hookSock := cfg.Agent.SocketPath(cfg.Spool.Dir)
	resp, err := agentproto.Identify(ctx, hookSock, 10*time.Second, []int{0}, false, "")
	if err != nil || resp.Error != "" || len(resp.GPUs) != 1 || resp.GPUs[0].UUID == "" {
		t.Errorf("hook socket during the flood: %+v, %v", resp, err)
	}
	if flooder != uint32(os.Geteuid()) {
		// judged: refused for the job, not for the flood
		presp, err := agentproto.AskProfile(ctx, cfg.Agent.ProfileSocket, 10*time.Second, agentproto.ProfileRequest{Job: 999, IntervalMS: 200, ForMS: 1000})
		if err == nil || !strings.Contains(err.Error(), "job 999 holds no GPU") {
			t.Errorf("another user's profile request during the flood: %+v, %v", presp, err)
		}
	}
	close(stop)
	watched.Wait()
	if !strings.Contains(scrape(t, r.a), `gpusuite_agent_socket_refused_total{reason="limit",socket="profile"}`) {
		t.Error("no refusal at the cap counted")
	}
	floodRSS := vmRSS(t)
	endFlood()

	if grown := peakFDs - base; grown > hookConns+profileConns+32 {
		t.Errorf("the agent's descriptors grew by %d under a flood of %d connections, over its sockets' caps (%d+%d)", grown, n, hookConns, profileConns)
	}
	if grown := peakG - baseG; grown > hookConns+profileConns+32 {
		t.Errorf("the agent's goroutines grew by %d under a flood of %d connections, over its sockets' caps", grown, n)
	}
	if peakHeld > profilePerUID {
		t.Errorf("the agent held %d of one user's connections, over the cap of %d", peakHeld, profilePerUID)
	}
	waitFor(t, "the flood's descriptors given back", settled, func() bool { return openFDs(t) <= base+8 })
	t.Logf("flood of %d idle connections: descriptors %d before, %d at the peak; goroutines %d, %d; resident %d MiB, %d MiB; %d of the flooder's held at most",
		n, base, peakFDs, baseG, peakG, baseRSS>>20, floodRSS>>20, peakHeld)
}

// floodBinary is the test binary where the flooder may run it, and the
// flooder's uid: nobody when the test runs as root (root dir is made
// traversable for it), else the test's own user.
func floodBinary(t *testing.T, root string) (string, uint32) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() != 0 {
		return self, uint32(os.Geteuid())
	}
	return reexec.Copy(t, root, "flood.test"), 65534
}

// An idle connection is closed at firstLineWithin, well before the 5 s a
// request may take; so is one that trickles a line that never ends.
func TestIdleConnectionClosed(t *testing.T) {
	r := startRunning(t)
	for _, tc := range []struct {
		name, path string
		trickle    bool
	}{
		{"profile idle", r.cfg.Agent.ProfileSocket, false},
		{"profile trickle", r.cfg.Agent.ProfileSocket, true},
		{"hook idle", r.cfg.Agent.SocketPath(r.cfg.Spool.Dir), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := net.Dial("unix", tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			start := time.Now()
			closed := make(chan error, 1)
			go func() {
				_, err := io.Copy(io.Discard, c)
				closed <- err
			}()
			giveUp := time.NewTimer(settled)
			defer giveUp.Stop()
			var trickle <-chan time.Time
			if tc.trickle {
				tk := time.NewTicker(100 * time.Millisecond)
				defer tk.Stop()
				trickle = tk.C
			}
			for {
				select {
				case err := <-closed:
					// a reset is a close with the trickled bytes unread
					if errors.Is(err, syscall.ECONNRESET) {
						err = nil
					}
					if took := time.Since(start); err != nil || took >= 5*time.Second {
						t.Errorf("closed after %s (%v), want about %s", took, err, firstLineWithin)
					}
					return
				case <-trickle:
					_, _ = c.Write([]byte("{"))
				case <-giveUp.C:
					t.Fatal("idle connection never closed")
				}
			}
		})
	}
}

// A soft descriptor limit below the hard one (a parent lowered it) is
// raised before the sockets' caps are taken from it.
func TestFileLimitRaisesSoft(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl) })
	low := syscall.Rlimit{Cur: min(rl.Max, 512), Max: rl.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &low); err != nil {
		t.Fatal(err)
	}
	if got := fileLimit(); got != rl.Max {
		t.Errorf("fileLimit() = %d, want the hard limit %d", got, rl.Max)
	}
	var now syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &now); err != nil {
		t.Fatal(err)
	}
	if now.Cur != rl.Max {
		t.Errorf("soft limit %d after fileLimit, want %d", now.Cur, rl.Max)
	}
}
