package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/agent/profileclient"
)

// listenProfileSocket opens the profile socket: any local user may
// connect (mode 0666); each request is judged by the peer's uid
// (SO_PEERCRED), never by anything it says.
func listenProfileSocket(path string) (*net.UnixListener, error) {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create profile socket dir %q: %w", dir, err)
	}
	st, err := os.Stat(dir)
	if err != nil {
		return nil, fmt.Errorf("stat profile socket dir %q: %w", dir, err)
	}
	if st.Mode().Perm()&0o022 != 0 {
		return nil, fmt.Errorf("profile socket dir %q is writable by group or others (mode %v): chmod go-w it", dir, st.Mode().Perm())
	}
	if c, err := net.DialTimeout("unix", path, 200*time.Millisecond); err == nil {
		c.Close()
		return nil, fmt.Errorf("profile socket %q is served by another running agent", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("remove stale profile socket %q: %w", path, err)
	}
	old := syscall.Umask(0o177)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	if err != nil {
		return nil, fmt.Errorf("listen on %q: %w", path, err)
	}
	if err := os.Chmod(path, 0o666); err != nil {
		ln.Close()
		return nil, fmt.Errorf("chmod %q: %w", path, err)
	}
	return ln, nil
}

// serveProfiles answers profile requests until ln is closed.
func (a *Agent) serveProfiles(ctx context.Context, ln *net.UnixListener) {
	for {
		c, err := ln.AcceptUnix()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return
			}
			a.log.Warn("profile socket accept failed", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		go a.handleProfile(ctx, c)
	}
}

func (a *Agent) handleProfile(ctx context.Context, c *net.UnixConn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(5 * time.Second))
	reply := func(r profileclient.Response) {
		data, _ := json.Marshal(r)
		_, _ = c.Write(append(data, '\n'))
	}
	uid, err := peerUID(c)
	if err != nil {
		reply(profileclient.Response{Error: "cannot tell who asks: " + err.Error()})
		return
	}
	sc := bufio.NewScanner(c)
	sc.Buffer(make([]byte, 0, 1024), profileclient.MaxMessage)
	if !sc.Scan() {
		return
	}
	var req profileclient.Request
	if err := json.Unmarshal(sc.Bytes(), &req); err != nil {
		reply(profileclient.Response{Error: "bad request: " + err.Error()})
		return
	}
	r := profileReq{req: req, uid: uid, reply: make(chan profileclient.Response, 1)}
	wait := time.NewTimer(4 * time.Second)
	defer wait.Stop()
	select {
	case a.profReq <- r:
	case <-ctx.Done():
		reply(profileclient.Response{Error: "agent stopping"})
		return
	case <-wait.C:
		reply(profileclient.Response{Error: "agent busy; try again"})
		return
	}
	select {
	case resp := <-r.reply:
		reply(resp)
	case <-ctx.Done():
		reply(profileclient.Response{Error: "agent stopping"})
	case <-wait.C:
		reply(profileclient.Response{Error: "agent busy; try again"})
	}
}
