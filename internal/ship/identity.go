package agent

import (
	"fmt"
	"os"
	"os/user"
	"runtime"
	"strconv"
	"syscall"
)

// shipIdentity is the uid/gid shipped files are written with; nil means
// the agent's own.
type shipIdentity struct {
	name     string
	uid, gid int
}

func lookupShipUser(name string) (*shipIdentity, error) {
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
	return &shipIdentity{name: name, uid: uid, gid: gid}, nil
}

// asShipUser runs f on an OS thread whose file-system identity is the
// ship user (setfsuid/setfsgid are per thread on Linux). Files f creates
// belong to that user, also on NFS with root_squash. The thread is never
// given back to the runtime: it ends with the goroutine.
func asShipUser(id *shipIdentity, f func() error) error {
	if id == nil {
		return f()
	}
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // no Unlock: the thread dies with this goroutine
		syscall.Syscall(syscall.SYS_SETFSGID, uintptr(id.gid), 0, 0)
		syscall.Syscall(syscall.SYS_SETFSUID, uintptr(id.uid), 0, 0)
		// setfs*id report the previous id, never an error: check the effect
		if got, _, _ := syscall.Syscall(syscall.SYS_SETFSUID, ^uintptr(0), 0, 0); int(got) != id.uid {
			done <- fmt.Errorf("cannot take the file-system identity of %s (uid %d): is the agent root?", id.name, id.uid)
			return
		}
		done <- f()
	}()
	return <-done
}

// openSources opens every name in the spool as the agent's own user (the
// spool is root-only), for the ship user's thread to copy from.
func openSources(dir string, names []string) (map[string]*os.File, error) {
	files := make(map[string]*os.File, len(names))
	for _, n := range names {
		f, err := os.Open(dir + "/" + n)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			for _, g := range files {
				g.Close()
			}
			return nil, err
		}
		files[n] = f
	}
	return files, nil
}
