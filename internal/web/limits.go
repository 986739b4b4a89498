package web

import (
	"context"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/webconfig"
)

// Bounds of the web server (invariant 9, docs/api.md "Limits").
const (
	// DefaultConcurrent is how many accounting requests (reports, job
	// pages, exports: everything dynamic but the live board and health)
	// run at once, half of them at most from one client; the rest wait
	// up to queueWait, then get 503.
	DefaultConcurrent = 4
	// LiveConcurrent is how many live requests (the board, its API,
	// free GPUs, health) run at once, on slots of their own: a slow
	// accounting request never queues the board or a health probe.
	LiveConcurrent = 8
	// DefaultTimeout is each dynamic request's deadline: its queries are
	// interrupted then.
	DefaultTimeout = 30 * time.Second
	// queueWait is how long a request waits for a free slot.
	queueWait = 2 * time.Second
	// retryAfter is the Retry-After of a 503 for a full server, seconds.
	retryAfter = 5
)

// NewServer is the http.Server for the dashboard and /metrics, with
// every timeout set: a slow or idle client holds a connection only so
// long. handlerTimeout is the longest a handler runs (DefaultTimeout
// when 0).
func NewServer(h http.Handler, handlerTimeout time.Duration) *http.Server {
	if handlerTimeout <= 0 {
		handlerTimeout = DefaultTimeout
	}
	// The answer is built before it is written: writing it gets the
	// handler's time plus as long again for a slow reader.
	return webconfig.NewServer(h, 2*handlerTimeout+10*time.Second)
}

// limiter admits at most cap(slots) requests at once, and at most
// perClient of them from one client (clientKey; 0: no such bound), so
// that one client looping heavy requests leaves slots to the others.
type limiter struct {
	slots     chan struct{}
	timeout   time.Duration
	perClient int
	trusted   []netip.Prefix
	mu        sync.Mutex
	// clients are the clients with a request admitted or waiting; each
	// is dropped when its last one ends, so the map holds no more
	// entries than requests in flight.
	clients map[string]*clientSlots
}

type clientSlots struct {
	slots chan struct{}
	refs  int
}

func newLimiter(n int, timeout time.Duration) *limiter {
	if n <= 0 {
		n = DefaultConcurrent
	}
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	return &limiter{slots: make(chan struct{}, n), timeout: timeout, clients: map[string]*clientSlots{}}
}

// perClientOf is the share of n slots one client may hold: half.
func perClientOf(n int) int {
	if n <= 0 {
		n = DefaultConcurrent
	}
	return max(1, n/2)
}

// client is the slots of client c, counted as used until leave.
func (l *limiter) client(c string) *clientSlots {
	l.mu.Lock()
	defer l.mu.Unlock()
	cs := l.clients[c]
	if cs == nil {
		cs = &clientSlots{slots: make(chan struct{}, l.perClient)}
		l.clients[c] = cs
	}
	cs.refs++
	return cs
}

func (l *limiter) leave(c string, cs *clientSlots) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cs.refs--; cs.refs == 0 {
		delete(l.clients, c)
	}
}

// wrap runs next in a slot with the request's deadline; a request that
// finds no slot (its client's, then one of all) within queueWait gets
// 503 with Retry-After, written by busy (JSON for the API, a page
// otherwise).
func (l *limiter) wrap(next http.Handler, busy func(w http.ResponseWriter, r *http.Request)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		t := time.NewTimer(queueWait)
		defer t.Stop()
		// take waits for one of slots until the one queue wait (t) is
		// over, which refuses the request, or the client leaves; false:
		// the request is answered.
		take := func(slots chan struct{}) bool {
			select {
			case slots <- struct{}{}:
				return true
			case <-t.C:
				w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
				busy(w, r)
			case <-r.Context().Done():
			}
			return false
		}
		if l.perClient > 0 {
			c := clientKey(r, l.trusted)
			cs := l.client(c)
			defer l.leave(c, cs)
			if !take(cs.slots) {
				return
			}
			defer func() { <-cs.slots }()
		}
		if !take(l.slots) {
			return
		}
		defer func() { <-l.slots }()
		ctx, cancel := context.WithTimeout(r.Context(), l.timeout)
		defer cancel()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// errBusy is the answer when every slot stays taken.
var errBusy = &httpError{code: http.StatusServiceUnavailable, msg: "server busy: too many report requests at once; retry in a few seconds"}
