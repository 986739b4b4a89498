package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/record"
)

// listenSocket opens the hook socket: root only (mode 0600, in a directory
// others cannot write, peers checked by SO_PEERCRED).
func listenSocket(path string) (*net.UnixListener, error) {
	return listenUnix("hook socket", path, 0o700, 0o600)
}

// listenProfileSocket opens the profile socket: any local user may
// connect (mode 0666); each request is judged by the peer's uid
// (SO_PEERCRED), never by anything it says.
func listenProfileSocket(path string) (*net.UnixListener, error) {
	return listenUnix("profile socket", path, 0o755, 0o666)
}

// listenUnix opens a unix socket at path with mode sock, in a directory
// (made with mode dir) that group and others cannot write. A stale socket
// of a dead agent is replaced; a live agent on it is an error.
func listenUnix(what, path string, dir, sock os.FileMode) (*net.UnixListener, error) {
	d := filepath.Dir(path)
	if err := os.MkdirAll(d, dir); err != nil {
		return nil, fmt.Errorf("create %s dir %q: %w", what, d, err)
	}
	st, err := os.Stat(d)
	if err != nil {
		return nil, fmt.Errorf("stat %s dir %q: %w", what, d, err)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("%s dir %q is writable by group or others (mode %v): chmod go-w it", what, d, st.Mode().Perm())
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("%s %q is served by another running agent", what, path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale %s %q: %w", what, path, err)
	}
	// created 0600 whatever the umask, then opened up as asked
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %q: %w", path, err)
	}
	if err := os.Chmod(path, sock); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %q: %w", path, err)
	}
	return ln, nil
}

// serveSocket answers hook requests until ln is closed.
func (a *Agent) serveSocket(ctx context.Context, ln *net.UnixListener) {
	a.accept(ctx, ln, "hook", a.hookLim, a.rootOnly, a.handleConn)
}

// rootOnly lets root and the agent's own user use the hook socket.
func (a *Agent) rootOnly(uid uint32) string {
	if uid != uint32(os.Geteuid()) && uid != 0 {
		return "only root may use the hook socket"
	}
	return ""
}

// connRefusal is the one line a refused connection gets; both sockets'
// clients read its error.
type connRefusal struct {
	Error string `json:"error"`
}

// accept hands each connection to ln to handle, on a goroutine of its
// own, until ln is closed or ctx ends. A peer that allow refuses, or that
// finds the socket or its uid at lim's cap, gets one error line and is
// closed at once, so it holds no descriptor and no goroutine. A connection
// handed on must send its first line within firstLineWithin and is done
// within connWithin, by until.
func (a *Agent) accept(ctx context.Context, ln *net.UnixListener, name string, lim *connLimits, allow func(uid uint32) string, handle func(ctx context.Context, c *net.UnixConn, uid uint32, until time.Time)) {
	what := name + " socket"
	var backoff time.Duration
	failures := 0
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			// Out of descriptors (EMFILE) or memory: the connection stays
			// in the backlog. Back off rather than spin, log once a streak.
			if failures++; failures == 1 {
				a.log.Warn(what+" accept failed; backing off", "err", err)
			}
			a.metrics.socketRefused.WithLabelValues(name, "accept_failed").Inc()
			backoff = min(max(2*backoff, acceptBackoffMin), acceptBackoffMax)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			continue
		}
		if failures > 0 {
			a.log.Info(what+" accepts again", "failed_accepts", failures)
			failures, backoff = 0, 0
		}
		uid, err := peerUID(c)
		if err != nil {
			a.metrics.socketRefused.WithLabelValues(name, "peer").Inc()
			refuse(c, "cannot tell who asks: "+err.Error())
			continue
		}
		if why := allow(uid); why != "" {
			a.metrics.socketRefused.WithLabelValues(name, "peer").Inc()
			refuse(c, why)
			continue
		}
		if !lim.acquire(uid) {
			a.metrics.socketRefused.WithLabelValues(name, "limit").Inc()
			refuse(c, fmt.Sprintf("%s busy: at its cap of %d connections (%d per user); try again", what, lim.total, lim.perUID))
			continue
		}
		start := time.Now()
		until := start.Add(connWithin)
		_ = c.SetDeadline(until)
		// any local user may connect: an idle one is closed soon (connlimit.go)
		_ = c.SetReadDeadline(start.Add(firstLineWithin))
		go func() {
			defer lim.release(uid)
			handle(ctx, c, uid, until)
		}()
	}
}

// refuse answers c with one error line and closes it. The line fits the
// new connection's empty buffer, so a peer that never reads cannot stall
// the accept loop; the deadline makes sure of it.
func refuse(c *net.UnixConn, why string) {
	_ = c.SetWriteDeadline(time.Now().Add(100 * time.Millisecond))
	agentproto.Reply(c, connRefusal{Error: why})
	c.Close()
}

func peerUID(c *net.UnixConn) (uint32, error) {
	cred, err := agentproto.PeerCred(c)
	if err != nil {
		return 0, err
	}
	return cred.Uid, nil
}

// handleConn answers a hook's requests: the first within firstLineWithin
// of the connection, all by until (accept).
func (a *Agent) handleConn(ctx context.Context, c *net.UnixConn, _ uint32, until time.Time) {
	defer c.Close()
	reply := func(r agentproto.Response) { agentproto.Reply(c, r) }
	// An identify that names its event's key may be followed on the same
	// connection by that event's announce (agentproto.Expect): read in
	// order, so the energy reading is registered before the event takes it.
	lines := agentproto.NewLines(c, agentproto.MaxMessage)
	for {
		var req agentproto.Request
		if sent, err := lines.Next(&req); !sent {
			return
		} else if err != nil {
			reply(agentproto.Response{Error: "bad request: " + err.Error()})
			return
		}
		// the announce comes after the hook spooled its event
		_ = c.SetReadDeadline(until)
		if !a.handleRequest(ctx, req, reply) {
			return
		}
	}
}

// handleRequest answers one request; more says whether the connection may
// carry another (an announce after a keyed identify).
func (a *Agent) handleRequest(ctx context.Context, req agentproto.Request, reply func(agentproto.Response)) (more bool) {
	switch req.Op {
	case agentproto.OpIdentify:
		resp, later := a.identify(ctx, req)
		reply(resp)
		if later != nil {
			// after the answer: the hook is no longer waiting
			a.readEnergy(ctx, later.read, later.devs)
		}
		return req.Key != ""
	case agentproto.OpAnnounce:
		if req.Event == nil || req.Event.Schema != record.EventSchema || req.Event.Key == "" {
			reply(agentproto.Response{Error: "announce needs a " + record.EventSchema + " event with a key"})
			return false
		}
		select {
		case a.announce <- req.Event:
			reply(agentproto.Response{})
		default:
			reply(agentproto.Response{Error: "agent busy; the spooled event will be read instead"})
		}
	default:
		reply(agentproto.Response{Error: fmt.Sprintf("unknown op %q", req.Op)})
	}
	return false
}

// energyLater is an identify's energy read, done after the answer.
type energyLater struct {
	read *energyRead
	devs []*gpu.Device
}

// identify answers from the agent's open NVML: the device table from the
// last enumeration, and (the health check's) process lists. A request that
// names its event's key gets no energy counters: they are read after the
// answer (energyLater; energyreads.go); one without gets fresh ones.
func (a *Agent) identify(ctx context.Context, req agentproto.Request) (agentproto.Response, *energyLater) {
	snap := a.snapshot()
	if snap.devs == nil {
		return agentproto.Response{Error: "agent has not enumerated the GPUs yet"}, nil
	}
	var later *energyLater
	if req.Key != "" {
		if r := a.energy.start(req.Key, time.Now()); r != nil {
			later = &energyLater{read: r}
		}
	}
	byMinor := map[int]*gpu.Device{}
	for _, d := range snap.devs {
		if d.Parent == "" { // MIG devices have no minor of their own
			byMinor[d.Minor] = d
		}
	}
	resp := agentproto.Response{GPUs: make([]gpu.Identity, len(req.Minors))}
	if req.Procs {
		resp.Procs, resp.ProcErrors = map[string][]agentproto.Proc{}, map[string]string{}
	}
	for i, m := range req.Minors {
		id := &resp.GPUs[i]
		id.Minor = m
		d, ok := byMinor[m]
		if !ok {
			id.Missing = append(id.Missing, fmt.Sprintf("identity: no GPU with minor number %d", m))
			continue
		}
		idx := d.Index
		id.Index, id.UUID, id.Model = &idx, d.UUID, d.Model
		h := d.Handle()
		if later != nil {
			later.devs = append(later.devs, d)
		} else if e, err := gpu.Call(ctx, a.lib.Timeout, "nvmlDeviceGetTotalEnergyConsumption", h.GetTotalEnergyConsumption); err != nil {
			id.Missing = append(id.Missing, "energy: "+err.Error())
		} else {
			id.EnergyMJ = &e
		}
		if req.Procs {
			ps, err := gpu.Call(ctx, a.lib.Timeout, "nvmlDeviceGetComputeRunningProcesses", func() ([]nvml.ProcessInfo, nvml.Return) {
				return h.GetComputeRunningProcesses()
			})
			if err != nil {
				resp.ProcErrors[d.UUID] = err.Error()
				continue
			}
			procs := make([]agentproto.Proc, 0, len(ps))
			for _, p := range ps {
				procs = append(procs, agentproto.NewProc(p.Pid, p.UsedGpuMemory))
			}
			resp.Procs[d.UUID] = procs
		}
	}
	if later != nil && len(later.devs) == 0 {
		close(later.read.done) // nothing to read
		later = nil
	}
	return resp, later
}
