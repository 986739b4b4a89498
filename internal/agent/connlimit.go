package agent

import (
	"sync"
	"syscall"
	"time"
)

// The agent's sockets are open to local processes (profile.sock to every
// user): each socket has its own connection caps, in all and per peer uid,
// so that one user's flood neither takes another user's turn nor the hook
// socket's, nor the descriptors the live file, segments and shipping need.
const (
	// hookConns: hooks of jobs starting and ending at once on one node;
	// root only, so no per-uid cap below the total.
	hookConns = 128
	// profileConns and profilePerUID: a profile is asked by hand, a few at
	// a time; eight per user leave room for seven more users.
	profileConns  = 64
	profilePerUID = 8
	// firstLineWithin: a client sends its request as soon as it connects;
	// a connection that has sent no whole line by then is idle or a
	// slowloris, and is closed (absolute, not reset by each byte).
	firstLineWithin = 2 * time.Second
	// connWithin: a connection's whole exchange, request to answer (a
	// hook's identify and its event's announce; a profile request).
	connWithin = 5 * time.Second
	// acceptBackoffMax bounds the wait after failed accepts (EMFILE):
	// the loop backs off from acceptBackoffMin instead of spinning.
	acceptBackoffMin = 5 * time.Millisecond
	acceptBackoffMax = time.Second
)

// connLimits counts one socket's open connections, in all and by peer uid.
type connLimits struct {
	mu     sync.Mutex
	total  int
	perUID int
	open   int
	byUID  map[uint32]int
}

func newConnLimits(total, perUID int) *connLimits {
	return &connLimits{total: total, perUID: min(perUID, total), byUID: map[uint32]int{}}
}

// acquire takes a slot for a connection of uid; false when the socket or
// that uid is at its cap.
func (l *connLimits) acquire(uid uint32) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.open >= l.total || l.byUID[uid] >= l.perUID {
		return false
	}
	l.open++
	l.byUID[uid]++
	return true
}

// release gives back a slot acquire took.
func (l *connLimits) release(uid uint32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byUID[uid]--; l.byUID[uid] <= 0 {
		delete(l.byUID, uid)
	}
}

// socketCaps scales the sockets' total caps to the descriptor limit: all
// of them together hold at most a quarter of nofile, the rest is the
// agent's own (segments, spool, live file, NVML, shipping).
func socketCaps(nofile uint64) (hook, profile int) {
	room := int(min(nofile/4, 1<<16))
	hook, profile = hookConns, profileConns
	if hook+profile > room {
		hook, profile = max(room*2/3, 2), max(room/3, 1)
	}
	return hook, profile
}

// fileLimit is the soft RLIMIT_NOFILE, raised to the hard one first (Go
// does so at start; a parent may have lowered it since).
func fileLimit() uint64 {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 1024 // the usual soft default; the caps then stay small
	}
	if rl.Cur < rl.Max {
		up := syscall.Rlimit{Cur: rl.Max, Max: rl.Max}
		if syscall.Setrlimit(syscall.RLIMIT_NOFILE, &up) == nil {
			return rl.Max
		}
	}
	return rl.Cur
}
