package web

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/board"
)

// A stream that has not written yet gets every section changed since,
// each once and newest, in the board's order; a change of layout asks
// for the whole board.
func TestHubDirtyMerges(t *testing.T) {
	pages := map[*board.Snapshot][]section{}
	snap := func(secs ...string) *board.Snapshot {
		s := &board.Snapshot{}
		for _, kv := range secs {
			id, html, _ := strings.Cut(kv, "=")
			pages[s] = append(pages[s], section{id: id, html: []byte(html)})
		}
		return s
	}
	hb := newHub(hubOptions{log: t.Logf, key: func(s *board.Snapshot) []byte { return fmt.Appendf(nil, "%p", s) },
		render: pagesRenderer(pages)})
	hb.running = true // no loop: the test processes by hand
	sb, why := hb.subscribe("c")
	if sb == nil {
		t.Fatal(why)
	}
	take := func() string {
		t.Helper()
		ev, err := takeRaw(hb, sb)
		if err != nil {
			t.Fatal(err)
		}
		return string(ev)
	}
	process := func(s *board.Snapshot) {
		t.Helper()
		if err := hb.process(s); err != nil {
			t.Fatal(err)
		}
	}
	process(snap("top=Board at 06:00:01", "a=A1", `b=<span data-t="5">3 s</span>`, "c=C1"))
	if got := take(); got != "event: board\ndata: whole\n\n" {
		t.Errorf("first: %q", got)
	}
	// Three changes while the client is slow: a, then c, then a again;
	// b's age text moves, which is no change.
	process(snap("top=Board at 06:00:02", "a=A2", `b=<span data-t="5">3 s</span>`, "c=C1"))
	process(snap("top=Board at 06:00:02", "a=A2", `b=<span data-t="5">3 s</span>`, "c=C2"))
	process(snap("top=Board at 06:00:03", "a=A3", `b=<span data-t="5">9 s</span>`, "c=C2"))
	select {
	case <-sb.sig:
	default:
		t.Fatal("no signal for the writer")
	}
	if diff := cmp.Diff("event: nodes\ndata: A3\ndata: C2\n\n", take()); diff != "" {
		t.Errorf("merged changes (-want +got):\n%s", diff)
	}
	if got := take(); got != "" {
		t.Errorf("nothing changed since, yet sent %q", got)
	}
	// A node more: the sections no longer line up, the whole board goes.
	process(snap("top=Board at 06:00:04", "a=A3", `b=<span data-t="5">3 s</span>`, "c=C2", "d=D1"))
	if got := take(); got != "event: board\ndata: whole\n\n" {
		t.Errorf("after a new node: %q", got)
	}
}

func TestWithoutMoving(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`<p>idle for <span data-t="17">4 s</span> ok</p>`, `<p>idle for <span data-t="17"></span> ok</p>`},
		{`<span class="pill">Board at 2026-11-26 06:00:00 UTC</span><span data-t="9">1 h 3 min</span>`, `<span class="pill"></span><span data-t="9"></span>`},
		{`no marks`, `no marks`},
		{`cut <span data-t="1`, `cut <span data-t="1`},
		{`<span data-t="1">tail without tag`, `<span data-t="1">`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := string(withoutMoving([]byte(tc.in))); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A lone CR ends a line for an event stream's reader: one in the board's
// text (a Slurm reason) must not cut a section short.
func TestDataLinesCR(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"<p>a</p>", "data: <p>a</p>\n"},
		{"<p>a</p>\n<p>b</p>\n", "data: <p>a</p>\ndata: <p>b</p>\n"},
		{"<p>a</p>\r\n<p>b</p>", "data: <p>a</p>\ndata: <p>b</p>\n"},
		{"<td>fan\rdata: x</td>", "data: <td>fan&#13;data: x</td>\n"},
		{"<td>\r\r</td>\r\n", "data: <td>&#13;&#13;</td>\n"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got := string(dataLines([]byte(tc.in)))
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
			if strings.Count(got, "\r") != 0 {
				t.Errorf("a CR is left in %q", got)
			}
		})
	}
}

// Only a board newer than the one published reaches the streams: an Old
// copy (a request that ended during a build) or a board built before the
// one held would show every viewer a false problem or a step back.
func TestHubDropsOldAndEarlier(t *testing.T) {
	t0 := time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)
	snap := func(at time.Time, old bool, html string) *board.Snapshot {
		return &board.Snapshot{Board: board.Board{At: at}, Old: old,
			Meta: board.Meta{Problems: []board.Problem{{Err: html}}}}
	}
	hb := newHub(hubOptions{log: t.Logf, key: func(s *board.Snapshot) []byte { return []byte(s.Meta.Problems[0].Err) },
		render: problemRenderer{}})
	hb.running = true // no loop: the test processes by hand
	sb, why := hb.subscribe("c")
	if sb == nil {
		t.Fatal(why)
	}
	process := func(s *board.Snapshot) {
		t.Helper()
		if err := hb.process(s); err != nil {
			t.Fatal(err)
		}
	}
	take := func() string {
		t.Helper()
		ev, err := takeRaw(hb, sb)
		if err != nil {
			t.Fatal(err)
		}
		return string(ev)
	}
	// Before the first build: the empty Old board is not published.
	process(snap(t0, true, "no board built yet"))
	if hb.snap != nil {
		t.Fatal("an Old board before the first build was published")
	}
	if got := take(); got != "" {
		t.Errorf("before any board: %q", got)
	}
	good := snap(t0.Add(time.Second), false, "good")
	process(good)
	if got := take(); got != "event: board\ndata: good\n\n" {
		t.Fatalf("first board: %q", got)
	}
	for _, tc := range []struct {
		name string
		s    *board.Snapshot
	}{
		{"old copy", snap(good.Board.At, true, "good, being rebuilt")},
		{"earlier", snap(t0, false, "earlier")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			process(tc.s)
			if hb.snap != good {
				t.Errorf("published %q", tc.s.Meta.Problems[0].Err)
			}
			if got := take(); got != "" {
				t.Errorf("sent %q", got)
			}
		})
	}
	process(snap(t0.Add(2*time.Second), false, "newer"))
	if got := take(); got != "event: nodes\ndata: newer\n\n" {
		t.Errorf("a newer board: %q", got)
	}
}

// Hubs that share their stream slots (the board with names and the one
// without, under web.private_data) share web.max_streams and
// web.max_streams_per_client: a stream on either takes from both.
func TestHubsShareStreamSlots(t *testing.T) {
	for _, tc := range []struct {
		name, why string
		slots     *streamSlots
	}{
		{"in all", "too many board streams open (web.max_streams 2)", newStreamSlots(2, -1)},
		{"per client", "this address holds 2 board streams already", newStreamSlots(10, 2)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hubs := make([]*hub, 2)
			for i := range hubs {
				hubs[i] = newHub(hubOptions{log: t.Logf, slots: tc.slots})
				hubs[i].running = true // no loop: nothing is broadcast
			}
			a, why := hubs[0].subscribe("c")
			if a == nil {
				t.Fatal(why)
			}
			if b, why := hubs[1].subscribe("c"); b == nil {
				t.Fatal(why)
			}
			if sb, why := hubs[1].subscribe("c"); sb != nil || !strings.Contains(why, tc.why) {
				t.Errorf("third stream, on the other hub: %v %q, want refused: %q", sb != nil, why, tc.why)
			}
			hubs[0].unsubscribe(a)
			hubs[0].unsubscribe(a) // once only
			if sb, why := hubs[1].subscribe("c"); sb == nil {
				t.Errorf("a stream after one closed: refused: %s", why)
			}
			if sb, _ := hubs[0].subscribe("c"); sb != nil {
				t.Error("a stream past the bound after a double unsubscribe")
			}
		})
	}
}

// pagesRenderer renders a snapshot as the sections the test gave it, and
// its whole fragment as "whole".
type pagesRenderer map[*board.Snapshot][]section

func (p pagesRenderer) renderFrag(*board.Snapshot) ([]byte, error) { return []byte("whole"), nil }

func (p pagesRenderer) renderSections(s *board.Snapshot) ([]section, error) {
	return append([]section(nil), p[s]...), nil
}

// problemRenderer renders a snapshot as its first problem's text.
type problemRenderer struct{}

func (problemRenderer) renderFrag(s *board.Snapshot) ([]byte, error) {
	return []byte(s.Meta.Problems[0].Err), nil
}

func (problemRenderer) renderSections(s *board.Snapshot) ([]section, error) {
	return []section{{id: "top", html: []byte(s.Meta.Problems[0].Err)}}, nil
}

// A gzip stream of events, small (stored) and large (compressed), the
// large one's blocks made once and sent on two streams, decodes to the
// events in order, checksum and length right.
func TestGzipStreamDecodes(t *testing.T) {
	pool := newDeflaters()
	big := &sseEvent{raw: []byte("event: board\n" + strings.Repeat("data: <div class=\"gpu s-busy\">#3 busy</div>\n", 5000) + "\n")}
	for _, tc := range []struct {
		name   string
		events []*sseEvent
	}{
		{"none", nil},
		{"small only", []*sseEvent{{raw: []byte("retry: 5000\n\n")}, {raw: []byte("event: now\ndata: 1795672800000\n\n")}}},
		{"small and large", []*sseEvent{{raw: []byte("retry: 5000\n\n")}, big, {raw: []byte("event: nodes\ndata: x\n\n")}}},
		{"the large one again", []*sseEvent{big, big}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			z := &gzipStream{pool: pool}
			var sent, want bytes.Buffer
			for _, ev := range tc.events {
				sent.Write(z.next(ev))
				want.Write(ev.raw)
			}
			sent.Write(z.end())
			r, err := gzip.NewReader(&sent)
			if err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("decode: %v", err)
			}
			if diff := cmp.Diff(want.String(), string(got)); diff != "" {
				t.Errorf("decoded (-want +got):\n%.2000s", diff)
			}
		})
	}
	if len(big.z) == 0 || len(big.z) > len(big.raw)/10 {
		t.Errorf("the large event compressed to %d bytes of %d", len(big.z), len(big.raw))
	}
}

// A delta of more than half a large board (past bigDelta) is sent as the
// whole board; one past bigDelta but under half, as a delta.
func TestHubBigDeltaSendsBoard(t *testing.T) {
	pages := map[*board.Snapshot][]section{}
	row := strings.Repeat("x", 20<<10)
	snap := func(v string, rows int) *board.Snapshot {
		s := &board.Snapshot{}
		pages[s] = append(pages[s], section{id: "top", html: []byte("top " + v)})
		for i := range 10 {
			r := "r" + row
			if i < rows {
				r = v + row
			}
			pages[s] = append(pages[s], section{id: fmt.Sprint("row", i), html: []byte(r)})
		}
		return s
	}
	hb := newHub(hubOptions{log: t.Logf, key: func(s *board.Snapshot) []byte { return fmt.Appendf(nil, "%p", s) },
		render: pagesRenderer(pages)})
	hb.running = true
	sb, why := hb.subscribe("c")
	if sb == nil {
		t.Fatal(why)
	}
	kind := func(s *board.Snapshot) string {
		t.Helper()
		if err := hb.process(s); err != nil {
			t.Fatal(err)
		}
		ev, err := takeRaw(hb, sb)
		if err != nil {
			t.Fatal(err)
		}
		k, _, _ := strings.Cut(string(ev), "\n")
		return k
	}
	for _, tc := range []struct {
		rows int
		want string
	}{{0, "event: board"}, {4, "event: nodes"}, {6, "event: board"}} {
		if got := kind(snap(fmt.Sprint("v", tc.rows), tc.rows)); got != tc.want {
			t.Errorf("%d rows of 10 changed: %q, want %q", tc.rows, got, tc.want)
		}
	}
}

// takeRaw is hb.take's event as sent uncompressed; nil: nothing.
func takeRaw(hb *hub, sb *subscriber) ([]byte, error) {
	ev, err := hb.take(sb)
	if ev == nil {
		return nil, err
	}
	return ev.raw, err
}
