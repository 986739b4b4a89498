package ship

import (
	"fmt"
	"os/user"
	"runtime"
	"strconv"
	"syscall"
)

// Identity is the uid/gid shipped files are written with; nil means
// the caller's own.
type Identity struct {
	Name     string
	UID, GID int
}

// LookupUser finds agent.ship_user; "" is nil (the caller's identity).
func LookupUser(name string) (*Identity, error) {
	if name == "" {
		return nil, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return nil, fmt.Errorf("key \"agent.ship_user\": %w (create the ingest service user on this node, or set agent.ship_user = \"\")", err)
	}
	uid, err1 := strconv.Atoi(u.Uid)
	gid, err2 := strconv.Atoi(u.Gid)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("key \"agent.ship_user\": user %q has uid %q gid %q", name, u.Uid, u.Gid)
	}
	return &Identity{Name: name, UID: uid, GID: gid}, nil
}

// AsUser runs f on an OS thread whose file-system identity is id, the
// ship user (nil: the caller's own); shipping and the agent's live-state
// file use it. setfsuid/setfsgid are per thread on Linux, so files f
// creates belong to that user, also on NFS with root_squash. The thread is
// never given back to the runtime: it ends with the goroutine.
func AsUser(id *Identity, f func() error) error {
	if id == nil {
		return f()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no Unlock: the thread dies with this goroutine
		syscall.Syscall(syscall.SYS_SETFSGID, uintptr(id.GID), 0, 0)
		syscall.Syscall(syscall.SYS_SETFSUID, uintptr(id.UID), 0, 0)
		// setfs*id report the previous id, never an error: check the effect
		if got, _, _ := syscall.Syscall(syscall.SYS_SETFSUID, ^uintptr(0), 0, 0); int(got) != id.UID {
			done <- fmt.Errorf("cannot take the file-system identity of %s (uid %d): is the agent root?", id.Name, id.UID)
			return
		}
		done <- f()
	}()
	return <-done
}
