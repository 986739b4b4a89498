package web

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
)

// Bounds of the board's event stream (docs/api.md, "Board events").
const (
	// DefaultMaxStreams is how many event streams are open at once
	// (web.max_streams); past it a new one gets 503. web.concurrent does
	// not count them: a stream holds no query, only a slot in the hub.
	DefaultMaxStreams = 1000
	// DefaultMaxStreamsPerClient is how many of them one client (an
	// IPv4 address, an IPv6 /64; clientKey) may hold, so one browser's
	// tabs or one script cannot take them all
	// (web.max_streams_per_client).
	DefaultMaxStreamsPerClient = 8
	// DefaultBoardTick is how often the broadcaster looks at the board.
	DefaultBoardTick = time.Second
	// heartbeat is the period of the server's time sent on a quiet
	// stream: it keeps proxies from closing it and the page's clock
	// offset true.
	heartbeat = 15 * time.Second
	// writeWait is how long one write to a stream may take; a client that
	// reads slower is dropped, not buffered for.
	writeWait = 10 * time.Second
	// bigDelta is the size past which a delta of more than half the
	// board is sent as the whole board instead (hub.take).
	bigDelta = 64 << 10
	// buildTimeout bounds one board build of the broadcaster.
	buildTimeout = 10 * time.Second
)

// eventsPath is the board's event stream.
const eventsPath = "/api/v1/board/events"

// section is one element of the board fragment that an event may send
// alone: the top (status, banners, counts, free table), a group's
// heading or a node's row.
type section struct {
	id string
	// html is the element as rendered; key is it without the texts that
	// move by themselves (ages the page ticks, the board's time), so
	// that a section is sent only when something in it changed; data is
	// html as an event's data lines, made once for every stream.
	html, key, data []byte
}

// subscriber is one open stream. Its dirty set merges the sections that
// changed since it last wrote, so a slow client loses no update and
// costs at most one copy of each section; sig wakes its writer.
type subscriber struct {
	client string
	sig    chan struct{}
	dirty  map[string]bool
	// full asks for the whole fragment: a new stream, or the groups or
	// nodes changed so that sections no longer line up.
	full bool
}

// hub is the one broadcaster of the board's events: one goroutine looks
// at the board every tick, while anyone listens, and renders a change
// once for all, so a thousand viewers cost one build and one render;
// each stream is then sent only the sections that changed.
type hub struct {
	hubOptions

	// proc makes one snapshot's processing whole (the loop's and a new
	// stream's).
	proc sync.Mutex

	mu      sync.Mutex
	subs    map[*subscriber]struct{}
	running bool
	snap    *board.Snapshot
	// lastKey is changeKey of the board whose sections are held: a board
	// with the same key renders nothing new.
	lastKey []byte
	layout  []string
	secs    map[string]section
	// size is the sections' data in all: about the whole board's event.
	size int
	// fullEv is the whole fragment's event of fullOf, rendered (and
	// compressed) once for all new streams of that snapshot.
	fullEv *sseEvent
	fullOf *board.Snapshot
	// kick asks the loop for a refresh now (a new stream); pub is closed
	// and replaced when snap is, for the streams that await a board.
	kick chan struct{}
	pub  chan struct{}
	// deflaters compress the events of gzip streams (eventzip.go).
	deflaters *sync.Pool
	// done ends the loop and every stream (Handler.Close, serve's end).
	done     chan struct{}
	doneOnce sync.Once
}

// boardRenderer renders a board for the event stream: the whole
// fragment ("boardfrag" of board.html) and, in the fragment's order, its
// parts that an event may send alone. *Handler is the one outside tests
// (renderFrag in boardpage.go, renderSections in board.go), for viewers
// with names or without.
type boardRenderer interface {
	renderFrag(*board.Snapshot) ([]byte, error)
	renderSections(*board.Snapshot) ([]section, error)
}

type hubOptions struct {
	src    *board.Source
	render boardRenderer
	// key is changeKey unless a test says otherwise.
	key  func(*board.Snapshot) []byte
	now  func() time.Time
	tick time.Duration
	// slots bound the streams; hubs that share one (the board with
	// names and without) share its bounds. nil: the hub's own, of max
	// and perClient.
	slots     *streamSlots
	max       int
	perClient int
	log       func(string, ...any)
}

// streamSlots counts the open board streams, in all and per client,
// against web.max_streams and web.max_streams_per_client.
type streamSlots struct {
	mu        sync.Mutex
	max       int
	perClient int // <= 0: no bound
	open      int
	byClient  map[string]int
}

func newStreamSlots(most, perClient int) *streamSlots {
	if most <= 0 {
		most = DefaultMaxStreams
	}
	if perClient == 0 {
		perClient = DefaultMaxStreamsPerClient
	}
	return &streamSlots{max: most, perClient: perClient, byClient: map[string]int{}}
}

// take holds a slot for client: "" when it got one, else why not.
func (sl *streamSlots) take(client string) string {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if sl.open >= sl.max {
		return "too many board streams open (web.max_streams " + strconv.Itoa(sl.max) + ")"
	}
	if sl.perClient > 0 && sl.byClient[client] >= sl.perClient {
		return "this address holds " + strconv.Itoa(sl.perClient) + " board streams already (web.max_streams_per_client); close a tab"
	}
	sl.count(client, 1)
	return ""
}

// give frees a slot of client.
func (sl *streamSlots) give(client string) {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.count(client, -1)
}

// count moves the open streams, in all and client's, by d; a client with
// none is forgotten. sl.mu is held.
func (sl *streamSlots) count(client string, d int) {
	sl.open += d
	if n := sl.byClient[client] + d; n > 0 {
		sl.byClient[client] = n
	} else {
		delete(sl.byClient, client)
	}
}

func newHub(o hubOptions) *hub {
	if o.tick <= 0 {
		o.tick = DefaultBoardTick
	}
	if o.slots == nil {
		o.slots = newStreamSlots(o.max, o.perClient)
	}
	if o.key == nil {
		o.key = changeKey
	}
	return &hub{hubOptions: o,
		subs: map[*subscriber]struct{}{}, secs: map[string]section{}, kick: make(chan struct{}, 1), pub: make(chan struct{}), done: make(chan struct{}),
		deflaters: newDeflaters()}
}

// subscribe adds a stream of client; "" when the hub is open, else why
// not (full, the client's share taken, or closed).
func (hb *hub) subscribe(client string) (*subscriber, string) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	select {
	case <-hb.done:
		return nil, "the server is stopping"
	default:
	}
	if why := hb.slots.take(client); why != "" {
		return nil, why
	}
	sb := &subscriber{client: client, sig: make(chan struct{}, 1), dirty: map[string]bool{}, full: true}
	hb.subs[sb] = struct{}{}
	if !hb.running {
		hb.running = true
		go hb.loop()
	}
	return sb, ""
}

func (hb *hub) unsubscribe(sb *subscriber) {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	if _, ok := hb.subs[sb]; ok {
		delete(hb.subs, sb)
		hb.slots.give(sb.client)
	}
}

// subscribers is how many streams are open.
func (hb *hub) subscribers() int {
	hb.mu.Lock()
	defer hb.mu.Unlock()
	return len(hb.subs)
}

func (hb *hub) close() { hb.doneOnce.Do(func() { close(hb.done) }) }

// loop builds the board every tick and marks what changed; it ends when
// the last subscriber leaves (the next one starts it again), so an
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
	for {
		hb.mu.Lock()
		if len(hb.subs) == 0 || ctx.Err() != nil {
			hb.running = false
			hb.snap, hb.lastKey, hb.layout, hb.secs, hb.fullEv, hb.fullOf = nil, nil, nil, map[string]section{}, nil, nil
			hb.mu.Unlock()
			return
		}
		hb.mu.Unlock()
		hb.refresh(ctx)
		select {
		case <-ctx.Done():
		case <-t.C:
		case <-hb.kick:
		}
	}
}

// refresh builds the board (bounded like a request) and processes it;
// only the loop calls it, so the streams are given the boards of one
// caller, in the order built.
func (hb *hub) refresh(ctx context.Context) {
	bctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	if err := hb.process(hb.src.Current(bctx)); err != nil {
		hb.log("board event", "err", err)
	}
}

// await asks the loop for a refresh now and waits until it has
// published a board built at or after at, ctx ends, or one build's time
// has passed (a hung build: the stream starts with the board held).
func (hb *hub) await(ctx context.Context, at time.Time) {
	select {
	case hb.kick <- struct{}{}:
	default: // one asked already stands for this one
	}
	t := time.NewTimer(buildTimeout)
	defer t.Stop()
	for {
		hb.mu.Lock()
		ok, pub := hb.snap != nil && !hb.snap.Board.At.Before(at), hb.pub
		hb.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-pub:
		case <-ctx.Done():
			return
		case <-hb.done:
			return
		case <-t.C:
			return
		}
	}
}

// publish makes s the board held; hb.mu is held.
func (hb *hub) publish(s *board.Snapshot) {
	hb.snap, hb.fullEv, hb.fullOf = s, nil, nil
	close(hb.pub)
	hb.pub = make(chan struct{})
}

// process renders the sections of s and marks those that changed dirty
// for every stream; a change of the sections' layout asks every stream
// for the whole fragment. A snapshot already processed costs nothing.
// An Old one is dropped: its problem line is about one caller's wait,
// not the board, and would be sent to every viewer, then taken back;
// so is one built before the board held, which would step back.
func (hb *hub) process(s *board.Snapshot) error {
	if s == nil || s.Old {
		return nil
	}
	hb.proc.Lock()
	defer hb.proc.Unlock()
	hb.mu.Lock()
	cur, last := hb.snap, hb.lastKey
	hb.mu.Unlock()
	if cur == s || cur != nil && s.Board.At.Before(cur.Board.At) {
		return nil
	}
	key := hb.key(s)
	if last != nil && bytes.Equal(key, last) {
		// Only the time moved: nothing to send, but a new stream gets
		// the board of now.
		hb.mu.Lock()
		hb.publish(s)
		hb.mu.Unlock()
		return nil
	}
	secs, err := hb.render.renderSections(s)
	if err != nil {
		return err
	}
	layout, size := make([]string, 0, len(secs)), 0
	for i := range secs {
		secs[i].key = withoutMoving(secs[i].html)
		secs[i].data = dataLines(secs[i].html)
		layout = append(layout, secs[i].id)
		size += len(secs[i].data)
	}
	hb.mu.Lock()
	defer hb.mu.Unlock()
	first := hb.snap == nil
	hb.publish(s)
	hb.lastKey, hb.size = key, size
	if !slices.Equal(layout, hb.layout) {
		hb.layout = layout
		hb.secs = make(map[string]section, len(secs))
		for _, sec := range secs {
			hb.secs[sec.id] = sec
		}
		for sb := range hb.subs {
			if !first {
				sb.full = true
				clear(sb.dirty)
			}
			if sb.full {
				wake(sb)
			}
		}
		return nil
	}
	var changed []string
	for _, sec := range secs {
		if !bytes.Equal(hb.secs[sec.id].key, sec.key) {
			changed = append(changed, sec.id)
		}
		// Kept even when unchanged: a later send carries the newest texts.
		hb.secs[sec.id] = sec
	}
	if len(changed) == 0 {
		return nil
	}
	for sb := range hb.subs {
		for _, id := range changed {
			sb.dirty[id] = true
		}
		wake(sb)
	}
	return nil
}

// wake signals sb's writer; a signal not yet taken stands for this one.
func wake(sb *subscriber) {
	select {
	case sb.sig <- struct{}{}:
	default:
	}
}

// take is what sb's writer sends now: the whole fragment when it asks
// for it (its compressed form shared), else its dirty sections in the
// board's order; nil: nothing.
func (hb *hub) take(sb *subscriber) (*sseEvent, error) {
	hb.mu.Lock()
	n := 0
	for id := range sb.dirty {
		n += len(hb.secs[id].data)
	}
	if n > bigDelta && 2*n > hb.size {
		// A large delta of more than half the board costs the stream
		// more than the whole board, rendered and compressed once for
		// all: so a delta is at most bigDelta or half the board's event.
		sb.full = true
	}
	if sb.full {
		snap, ev := hb.snap, hb.fullEv
		if snap == nil {
			hb.mu.Unlock()
			return nil, nil
		}
		sb.full = false
		clear(sb.dirty)
		hb.mu.Unlock()
		if ev != nil {
			return ev, nil
		}
		frag, err := hb.render.renderFrag(snap)
		if err != nil {
			return nil, err
		}
		ev = &sseEvent{raw: event("board", frag)}
		hb.mu.Lock()
		if hb.snap == snap {
			hb.fullEv, hb.fullOf = ev, snap
		}
		hb.mu.Unlock()
		return ev, nil
	}
	defer hb.mu.Unlock()
	if len(sb.dirty) == 0 {
		return nil, nil
	}
	b := bytes.NewBuffer(make([]byte, 0, n+16))
	b.WriteString("event: nodes\n")
	for _, id := range hb.layout {
		if sb.dirty[id] {
			b.Write(hb.secs[id].data)
		}
	}
	b.WriteByte('\n')
	clear(sb.dirty)
	return &sseEvent{raw: b.Bytes()}, nil
}

// event is one SSE event: one data line per line of data.
func event(name string, data []byte) []byte {
	lines := dataLines(data)
	b := bytes.NewBuffer(make([]byte, 0, len(lines)+len(name)+9))
	b.WriteString("event: ")
	b.WriteString(name)
	b.WriteByte('\n')
	b.Write(lines)
	b.WriteByte('\n')
	return b.Bytes()
}

// dataLines is HTML data as an event's "data: " lines. A reader ends a
// line at a lone CR too, and html/template leaves one as it is (a Slurm
// reason may hold one): each is written &#13;, which the page reads as
// the same character, so no text can cut a section short.
func dataLines(data []byte) []byte {
	b := bytes.NewBuffer(make([]byte, 0, len(data)+len(data)/32+8))
	for line := range bytes.Lines(data) {
		b.WriteString("data: ")
		line = bytes.TrimRight(line, "\r\n")
		for {
			i := bytes.IndexByte(line, '\r')
			if i < 0 {
				break
			}
			b.Write(line[:i])
			b.WriteString("&#13;")
			line = line[i+1:]
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// withoutMoving is html without the texts that change while the board
// does not: each age's text (kept: its data-t time) and the board's time.
func withoutMoving(html []byte) []byte {
	const ageMark, atMark = `data-t="`, "Board at "
	out := make([]byte, 0, len(html))
	for len(html) > 0 {
		i, j := bytes.Index(html, []byte(ageMark)), bytes.Index(html, []byte(atMark))
		if i < 0 && j < 0 {
			break
		}
		if i < 0 || j >= 0 && j < i {
			// The board's time, up to the next tag.
			out = append(out, html[:j]...)
			html = html[j+len(atMark):]
		} else {
			// An age: keep data-t="…">, drop the text up to the next tag.
			end := bytes.IndexByte(html[i:], '>')
			if end < 0 {
				break
			}
			out = append(out, html[:i+end+1]...)
			html = html[i+end+1:]
		}
		if k := bytes.IndexByte(html, '<'); k >= 0 {
			html = html[k:]
		} else {
			html = nil
		}
	}
	return append(out, html...)
}

// changeKey is what makes a board new to a viewer: its document without
// the times that move every second by themselves (the board's time and
// each job's elapsed seconds, which the page ticks on its own).
func changeKey(s *board.Snapshot) []byte {
	d := s.View().Status(s.Board.Nodes)
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

// nowEvent is the server's time, Unix milliseconds: the page's clock
// offset, sent before each board event and as the heartbeat.
func (hb *hub) nowEvent() []byte {
	return []byte("event: now\ndata: " + strconv.FormatInt(hb.now().UnixMilli(), 10) + "\n\n")
}

// GET /api/v1/board/events: the board as server-sent events: the whole
// fragment first ("board"), then the sections that changed ("nodes"),
// each after the server's time ("now").
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
	// Those web.private_data hides names from share one board with
	// every name hidden.
	hb := h.hub
	if viewerOf(r).private {
		hb = h.anonHub
	}
	sb, why := hb.subscribe(clientKey(r, h.o.TrustedProxies))
	if sb == nil {
		w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"error": why + "; retry in a few seconds, or poll /api/v1/board"})
		return
	}
	defer hb.unsubscribe(sb)
	rc := http.NewResponseController(w)
	hd := w.Header()
	hd.Set("Content-Type", "text/event-stream; charset=utf-8")
	hd.Set("Cache-Control", "no-store")
	hd.Set("X-Content-Type-Options", "nosniff")
	// A proxy must not hold the stream back to buffer it.
	hd.Set("X-Accel-Buffering", "no")
	hd.Add("Vary", "Accept-Encoding")
	hd.Add("Vary", "Accept-Language") // the board's events are in the browser's language
	var gz *gzipStream
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		gz = &gzipStream{pool: hb.deflaters}
		hd.Set("Content-Encoding", "gzip")
	}
	w.WriteHeader(http.StatusOK)
	write := func(evs ...*sseEvent) bool {
		// The server's WriteTimeout is for answers, not a stream: each
		// write gets writeWait of its own instead.
		_ = rc.SetWriteDeadline(time.Now().Add(writeWait))
		for _, ev := range evs {
			b := ev.raw
			if gz != nil {
				b = gz.next(ev)
			}
			if _, err := w.Write(b); err != nil {
				return false
			}
		}
		return rc.Flush() == nil
	}
	if gz != nil {
		// A stream that ends with the server ends its gzip member whole.
		defer func() {
			_ = rc.SetWriteDeadline(time.Now().Add(writeWait))
			_, _ = w.Write(gz.end())
		}()
	}
	if !write(&sseEvent{raw: []byte("retry: 5000\n\n")}) {
		return
	}
	// A new stream gets the board as it is now, not as it was at the
	// last change: a board older than the source's MaxAge is rebuilt
	// here, and the stream starts once the loop has published it. This
	// request's board itself is never published: an Old copy, had when
	// the viewer left during a build, would change every viewer's board.
	if cur := h.o.Board.Current(r.Context()); !cur.Old {
		hb.await(r.Context(), cur.Board.At)
	}
	wake(sb)
	beat := time.NewTicker(heartbeat)
	defer beat.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-hb.done:
			return
		case <-sb.sig:
			ev, err := hb.take(sb)
			if err != nil {
				h.o.Log.Warn("board event", "err", err)
				continue
			}
			if ev != nil && !write(&sseEvent{raw: hb.nowEvent()}, ev) {
				return
			}
		case <-beat.C:
			if !write(&sseEvent{raw: hb.nowEvent()}) {
				return
			}
		}
	}
}
