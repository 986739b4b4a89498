package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
)

// Bounds of the board's event stream (docs/api.md, "Board events").
const (
	// DefaultMaxStreams is how many event streams are open at once; past
	// it a new one gets 503. web.concurrent does not count them: a stream
	// holds no query, only a slot in the broadcaster.
	DefaultMaxStreams = 1000
	// DefaultBoardTick is how often the broadcaster looks at the board.
	DefaultBoardTick = time.Second
	// heartbeat is the period of the comment that keeps proxies from
	// closing a quiet stream.
	heartbeat = 15 * time.Second
	// writeWait is how long one write to a stream may take; a client that
	// reads slower is dropped, not buffered for.
	writeWait = 10 * time.Second
	// buildTimeout bounds one board build of the broadcaster.
	buildTimeout = 10 * time.Second
)

// eventsPath is the board's event stream.
const eventsPath = "/api/v1/board/events"

// hub is the one broadcaster of the board's events: one goroutine looks
// at the board every tick, while anyone listens, and renders a change
// once for all, so a thousand viewers cost one build and one render.
type hub struct {
	src    *board.Source
	render func(*board.Snapshot) ([]byte, error)
	tick   time.Duration
	max    int
	log    func(msg string, args ...any)

	mu      sync.Mutex
	subs    map[chan []byte]struct{}
	running bool
	// last is the event last rendered; new subscribers get it first.
	last []byte
	// done ends the loop and every stream (Handler.Close, serve's end).
	done     chan struct{}
	doneOnce sync.Once
}

func newHub(src *board.Source, render func(*board.Snapshot) ([]byte, error), tick time.Duration, max int, log func(string, ...any)) *hub {
	if tick <= 0 {
		tick = DefaultBoardTick
	}
	if max <= 0 {
		max = DefaultMaxStreams
	}
	return &hub{src: src, render: render, tick: tick, max: max, log: log, subs: map[chan []byte]struct{}{}, done: make(chan struct{})}
}

// subscribe adds a listener; false when the hub is full or closed. The
// channel holds one event: a newer one replaces one not yet taken.
func (hb *hub) subscribe() (chan []byte, bool) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	select {
	case <-hb.done:
		return nil, false
	default:
	}
	if len(hb.subs) >= hb.max {
		return nil, false
	}
	ch := make(chan []byte, 1)
	if hb.last != nil {
		ch <- hb.last
	}
	hb.subs[ch] = struct{}{}
	if !hb.running {
		hb.running = true
		go hb.loop()
	}
	return ch, true
}

func (hb *hub) unsubscribe(ch chan []byte) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	delete(hb.subs, ch)
}

// subscribers is how many streams are open.
func (hb *hub) subscribers() int {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return len(hb.subs)
}

func (hb *hub) close() { hb.doneOnce.Do(func() { close(hb.done) }) }

// loop builds the board every tick and sends it when it changed; it ends
// when the last subscriber leaves (the next one starts it again), so an
// unwatched board costs nothing.
func (hb *hub) loop() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-hb.done:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(hb.tick)
	defer t.Stop()
	var lastKey []byte
	for {
		hb.mu.Lock()
		if len(hb.subs) == 0 || ctx.Err() != nil {
			hb.running, hb.last = false, nil
			hb.mu.Unlock()
			return
		}
		hb.mu.Unlock()
		// A build reads files and the notes: bounded like a request.
		bctx, bcancel := context.WithTimeout(ctx, buildTimeout)
		s := hb.src.Current(bctx)
		bcancel()
		if key := changeKey(s); !bytes.Equal(key, lastKey) {
			ev, err := hb.event(s)
			if err != nil {
				hb.log("board event", "err", err)
			} else {
				lastKey = key
				hb.send(ev)
			}
		}
		select {
		case <-ctx.Done():
		case <-t.C:
		}
	}
}

// event is one SSE event of the rendered fragment: one data line per
// line of it.
func (hb *hub) event(s *board.Snapshot) ([]byte, error) {
	frag, err := hb.render(s)
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	b.WriteString("event: board\n")
	for line := range bytes.Lines(frag) {
		b.WriteString("data: ")
		b.Write(bytes.TrimRight(line, "\r\n"))
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

func (hb *hub) send(ev []byte) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	hb.last = ev
	for ch := range hb.subs {
		select {
		case <-ch: // not taken yet: the newer one replaces it
		default:
		}
		ch <- ev
	}
}

// changeKey is what makes a board new to a viewer: its document without
// the times that move every second by themselves (the board's time and
// each job's elapsed seconds, which the page ticks on its own).
func changeKey(s *board.Snapshot) []byte {
	d := board.NewStatusDoc(&s.Board, s.Board.Nodes, s.Meta)
	d.At = ""
	for i := range d.Nodes {
		for j := range d.Nodes[i].GPUs {
			for k := range d.Nodes[i].GPUs[j].Jobs {
				d.Nodes[i].GPUs[j].Jobs[k].ElapsedS = nil
			}
		}
	}
	b, _ := json.Marshal(d) // plain values: cannot fail
	return append(b, s.NotesError...)
}

// GET /api/v1/board/events: the board fragment as server-sent events.
func (h *Handler) boardEvents(w http.ResponseWriter, r *http.Request) {
	if h.o.Board == nil {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": boardOffMsg})
		return
	}
	if err := onlyParams(r.URL.Query()); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]string{"error": err.Error()})
		return
	}
	ch, ok := h.hub.subscribe()
	if !ok {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "too many board streams open (or the server is stopping); retry in a few seconds, or poll /api/v1/board"})
		return
	}
	defer h.hub.unsubscribe(ch)
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	// A proxy must not hold the stream back to buffer it.
	hd.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	write := func(b []byte) bool {
		// The server's WriteTimeout is for answers, not a stream: each
		// write gets writeWait of its own instead.
		_ = rc.SetWriteDeadline(time.Now().Add(writeWait))
		if _, err := w.Write(b); err != nil {
			return false
		}
		return rc.Flush() == nil
	}
	if !write([]byte("retry: 5000\n\n")) {
		return
	}
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-h.hub.done:
			return
		case ev := <-ch:
			if !write(ev) {
				return
			}
		case <-beat.C:
			if !write([]byte(": heartbeat\n\n")) {
				return
			}
		}
	}
}
