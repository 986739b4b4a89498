package web_test

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
	"github.com/aicloud/gpusuite/internal/testkit/snapshot"
	"github.com/aicloud/gpusuite/internal/web"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// boardNow is the fixed clock of the board tests.
var boardNow = time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC)

func u32(v uint32) *uint32 { return &v }
func u64(v uint64) *uint64 { return &v }

// liveGPU is a GPU of a snapshot: util, memory used of 80 GiB, and the
// jobs (with a process each, of the job's user) it is allocated to.
func liveGPU(index int, util uint32, memMiB uint64, jobs ...uint64) record.LiveGPU {
	g := record.LiveGPU{Index: index, UUID: fmt.Sprintf("GPU-%04d", index), Model: "NVIDIA H100", Util: u32(util),
		MemUsedMiB: u64(memMiB), MemTotalMiB: u64(81920), PowerMW: u32(350_000), TempC: u32(55)}
	for _, j := range jobs {
		g.Jobs = append(g.Jobs, record.LiveJob{Job: j, User: fmt.Sprintf("u%d", j), Account: "physics", Start: boardNow.Add(-90 * time.Minute)})
		g.Procs = append(g.Procs, record.LiveProc{PID: uint32(1000 + j), User: fmt.Sprintf("u%d", j), Job: j, MemUsedMiB: memMiB})
	}
	return g
}

func writeSnapshot(t testing.TB, dir string, l record.Live) {
	t.Helper()
	l.Schema, l.Cluster = record.LiveSchema, "c1"
	if l.Interval == 0 {
		l.Interval = 10
	}
	if l.Time.IsZero() {
		l.Time = boardNow.Add(-4 * time.Second)
	}
	snapshot.Write(t, dir, l)
}

// liveBoard is a cluster of four nodes: n1 with a busy, an idle, a
// foreign and a free GPU; n2 (in two partitions, one reserved GPU node)
// free; n3 drained; n4 silent for a minute (stale).
type liveBoard struct {
	dir   string
	src   *board.Source
	clock *clock
	slurm func() (slurmstate.State, error)
	mu    sync.Mutex
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

func slurmNode(name string, cond slurmstate.Condition, gpus int, parts ...string) slurmstate.Node {
	return slurmstate.Node{Name: name, Condition: cond, Partitions: parts, GPUs: []slurmstate.GPU{{Type: "h100", Count: gpus}}, GPUCount: gpus}
}

func newLiveBoard(t testing.TB, notes []board.Note) *liveBoard {
	t.Helper()
	lb := &liveBoard{dir: t.TempDir(), clock: &clock{t: boardNow}}
	foreign := liveGPU(2, 30, 2048, 8)
	foreign.Procs = append(foreign.Procs, record.LiveProc{PID: 4242, User: "mallory", Job: 99, MemUsedMiB: 1024})
	writeSnapshot(t, lb.dir, record.Live{Node: "n1", GPUs: []record.LiveGPU{liveGPU(0, 87, 40960, 7), liveGPU(1, 0, 512, 7), foreign, liveGPU(3, 0, 0)}})
	writeSnapshot(t, lb.dir, record.Live{Node: "n2", GPUs: []record.LiveGPU{liveGPU(0, 0, 0), liveGPU(1, 0, 0)}})
	writeSnapshot(t, lb.dir, record.Live{Node: "n3", GPUs: []record.LiveGPU{liveGPU(0, 0, 0)}})
	writeSnapshot(t, lb.dir, record.Live{Node: "n4", Time: boardNow.Add(-time.Minute), GPUs: []record.LiveGPU{liveGPU(0, 0, 0)}})
	n3 := slurmNode("n3", slurmstate.Drained, 1, "gpu")
	n3.Reason = "bad fan <check>"
	st := slurmstate.State{At: boardNow.Add(-12 * time.Second), Nodes: []slurmstate.Node{
		slurmNode("n1", slurmstate.Mixed, 4, "gpu"), slurmNode("n2", slurmstate.Idle, 2, "gpu", "long"), n3,
		slurmNode("n4", slurmstate.Idle, 1, "gpu")},
		Reservations: []slurmstate.Reservation{{Name: "maint", Nodes: []string{"n2"}}}}
	lb.slurm = func() (slurmstate.State, error) { return st, nil }
	lb.src = board.NewSource(board.SourceOptions{LiveDir: lb.dir, Now: lb.clock.now, MaxAge: time.Millisecond,
		Slurm: func(ctx context.Context) (slurmstate.State, error) {
			lb.mu.Lock()
			defer lb.mu.Unlock()
			return lb.slurm()
		},
		Notes: func(ctx context.Context, now time.Time) ([]board.Note, error) { return notes, nil }})
	lb.src.RefreshSlurm(context.Background())
	return lb
}

func newBoardServer(t testing.TB, o web.Options) *httptest.Server {
	t.Helper()
	if o.DB == "" {
		o.DB = filepath.Join(t.TempDir(), "none.db")
	}
	o.Location = time.UTC
	if o.Now == nil {
		o.Now = func() time.Time { return boardNow }
	}
	h, err := web.New(o)
	if err != nil {
		t.Fatal(err)
	}
	// As serve serves it: the security headers (the browser tests see
	// the policy at work) and reads only.
	srv := httptest.NewServer(web.Secure(web.ReadOnly(h)))
	t.Cleanup(func() {
		h.EndStreams() // httptest's Close waits for the streams
		srv.Close()
		h.Close()
	})
	return srv
}

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test ./internal/web/ -run %s -update writes it)", err, t.Name())
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", path, diff)
	}
}

func bookedNote() []board.Note {
	one := 1
	return []board.Note{{ID: 3, Node: "n2", GPU: &one, Until: boardNow.Add(2 * time.Hour), Text: "<b>demo</b> & friends", Author: "ann"}}
}

func TestBoardAPI(t *testing.T) {
	lb := newLiveBoard(t, bookedNote())
	srv := newBoardServer(t, web.Options{Board: lb.src})
	for _, tc := range []struct {
		name, path, golden string
	}{
		{"whole board", "/api/v1/board", "board.json"},
		{"two nodes", "/api/v1/board?node=n3&node=n1&node=n3", "board-n3-n1.json"},
		{"last hour", "/api/v1/board?node=n1&last_hour=1", "board-n1-last-hour.json"},
		{"free", "/api/v1/free", "free.json"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, b := getJSON(t, srv.URL+tc.path, nil)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, b)
			}
			golden(t, tc.golden, b)
		})
	}
	// The API's document is the CLI's: gpuacct status --format json
	// prints the same board.View's Status.
	var doc board.StatusDoc
	if _, b := getJSON(t, srv.URL+"/api/v1/board", &doc); doc.Schema != board.StatusSchema || doc.Totals.Free != 1 || doc.Totals.Booked != 1 {
		t.Errorf("status document: schema %q, free %d, booked %d in %s", doc.Schema, doc.Totals.Free, doc.Totals.Booked, b)
	}
}

func TestBoardAPIBadInput(t *testing.T) {
	lb := newLiveBoard(t, nil)
	srv := newBoardServer(t, web.Options{Board: lb.src})
	many := url.Values{}
	for i := range 1001 {
		many.Add("node", fmt.Sprintf("n%d", i))
	}
	for _, tc := range []struct {
		path string
		code int
		msg  string
	}{
		{"/api/v1/board?node=nope", 404, `node "nope" is not on the board`},
		{"/api/v1/board?node=", 400, "empty node parameter"},
		{"/api/v1/board?nodes=n1", 400, `unknown parameter "nodes": this takes node`},
		{"/api/v1/board?" + many.Encode(), 400, "1001 node parameters, more than the 1000"},
		{"/api/v1/free?node=n1", 400, `unknown parameter "node": this takes no parameter`},
		{"/api/v1/notes?all=yes", 400, `all "yes" is not 1 or 0`},
		{"/api/v1/notes?al=1", 400, `unknown parameter "al": this takes all, clusters, cluster`},
		{"/api/v1/board/events?x=1", 400, `unknown parameter "x"`},
	} {
		t.Run(tc.path[:min(len(tc.path), 40)], func(t *testing.T) {
			var e struct {
				Error string `json:"error"`
			}
			code, b := getJSON(t, srv.URL+tc.path, &e)
			if code != tc.code || !strings.Contains(e.Error, tc.msg) {
				t.Errorf("%d %s, want %d with %q", code, b, tc.code, tc.msg)
			}
		})
	}
}

func TestBoardOff(t *testing.T) {
	srv := newBoardServer(t, web.Options{})
	for _, p := range []string{"/", "/api/v1/board", "/api/v1/free", "/api/v1/board/events"} {
		code, b := getJSON(t, srv.URL+p, nil)
		if code != http.StatusServiceUnavailable || !strings.Contains(string(b), "the live board is off") {
			t.Errorf("%s without a board: %d %.300s", p, code, b)
		}
	}
}

func TestBoardPage(t *testing.T) {
	lb := newLiveBoard(t, bookedNote())
	srv := newBoardServer(t, web.Options{Board: lb.src, BoardRefresh: 20 * time.Second})
	code, b := getJSON(t, srv.URL+"/", nil)
	if code != http.StatusOK {
		t.Fatalf("%d %s", code, b)
	}
	page := string(b)
	for _, want := range []string{
		`<noscript><meta http-equiv="refresh" content="20"></noscript>`,
		`id="kpi-free">1<`, `id="kpi-booked">1<`, `id="kpi-idle">1<`, `id="kpi-running">2<`, `id="kpi-stale">1<`,
		`agents <span data-t="1795672796000">4 s</span> ago`, `Slurm <span data-t="1795672788000">12 s</span> ago`,
		"1 node(s) STALE, never shown free: n4",
		// Markup in a note or a drain reason is text.
		"&lt;b&gt;demo&lt;/b&gt; &amp; friends", "bad fan &lt;check&gt;",
		`id="gpu-n1-0" tabindex="0"`, "●</span> #0 busy", "◐</span> #1 idle", "⚠</span> #2 foreign", "○</span> #3 free", "R</span> #0 reserved", "B</span> #1 booked", "⊘</span> #0 drained", "?</span> #0 stale",
		"job <a href=\"/job/c1/7\">7</a> · user u7 · team physics · elapsed <span data-t=\"1795667400000\">1 h 30 min</span>",
		"<td>4242</td><td>mallory</td><td>99 ⚠ foreign</td><td class=\"num\">1.0 GiB</td>",
		"also in long", "reservation maint",
		`<a href="/" class="on" aria-current="page">Board</a>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("board page lacks %q", want)
		}
	}
	if strings.Contains(page, "<b>demo</b>") {
		t.Error("a note's markup is rendered as markup")
	}

	lb.mu.Lock()
	lb.slurm = func() (slurmstate.State, error) {
		return slurmstate.State{}, fmt.Errorf("scontrol: slurm_load_node error: Unable to contact slurm controller")
	}
	lb.mu.Unlock()
	lb.src.RefreshSlurm(context.Background())
	lb.clock.set(boardNow.Add(time.Second))
	_, b = getJSON(t, srv.URL+"/", nil)
	if want := "Slurm unreachable: scontrol: slurm_load_node error: Unable to contact slurm controller"; !strings.Contains(string(b), want) {
		t.Errorf("board page with Slurm down lacks %q", want)
	}
}

func TestBoardOldOverviewLinks(t *testing.T) {
	srv := newBoardServer(t, web.Options{})
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(srv.URL + "/?start=now-30days&period=day")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusFound || loc != "/accounting?start=now-30days&period=day" {
		t.Errorf("old overview link: %d to %q, want 302 to /accounting with its window", resp.StatusCode, loc)
	}
}

func TestBoardNotesAPI(t *testing.T) {
	l := ledgerdb.NewLedger(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	batch, err := st.Begin(ctx, boardNow)
	if err != nil {
		t.Fatal(err)
	}
	gpu := 2
	for _, n := range []store.Note{
		{Cluster: "c1", Node: "n1", GPU: &gpu, Until: boardNow.Add(time.Hour), Text: "<i>my run</i>", Author: "ann", UID: 1001, Created: boardNow.Add(-time.Hour)},
		{Cluster: "c1", Node: "n2", Until: boardNow.Add(-time.Minute), Text: "expired", Author: "bob", UID: 1002, Created: boardNow.Add(-2 * time.Hour)},
	} {
		if _, err := batch.AddNote(n, ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := batch.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	srv := newBoardServer(t, web.Options{DB: l.Loc()})
	for _, tc := range []struct{ path, golden string }{{"/api/v1/notes", "notes.json"}, {"/api/v1/notes?all=1", "notes-all.json"}} {
		t.Run(tc.golden, func(t *testing.T) {
			code, b := getJSON(t, srv.URL+tc.path, nil)
			if code != http.StatusOK {
				t.Fatalf("%d %s", code, b)
			}
			golden(t, tc.golden, b)
		})
	}
}

// sseReader reads the board's events.
type sseReader struct {
	resp *http.Response
	r    *bufio.Reader
	// now is the data of the last "now" event: the server's time.
	now string
}

func openEvents(t *testing.T, url string) *sseReader {
	t.Helper()
	resp, err := http.Get(url + "/api/v1/board/events")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	return &sseReader{resp: resp, r: bufio.NewReader(resp.Body)}
}

// next returns the data of the next board event, whole ("board") or
// changed sections ("nodes"); an error when the stream ends.
func (s *sseReader) next() (string, error) {
	_, data, err := s.nextEvent()
	return data, err
}

// nextEvent returns the next board event's name and data; the server's
// time ("now") is kept in s.now.
func (s *sseReader) nextEvent() (string, string, error) {
	var data []string
	name := ""
	for {
		line, err := s.r.ReadString('\n')
		if err != nil {
			return "", "", err
		}
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && name == "now":
			s.now = strings.Join(data, "\n")
			name, data = "", nil
		case line == "" && name != "":
			return name, strings.Join(data, "\n"), nil
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data = append(data, strings.TrimPrefix(line, "data: "))
		}
	}
}

// within runs fn in a goroutine and fails the test if it does not return
// within d (a generous bound: it only keeps a broken stream from hanging).
func within[T any](t *testing.T, d time.Duration, fn func() (T, error)) (T, error) {
	t.Helper()
	type res struct {
		v   T
		err error
	}
	ch := make(chan res, 1)
	go func() { v, err := fn(); ch <- res{v, err} }()
	select {
	case r := <-ch:
		return r.v, r.err
	case <-time.After(d):
		t.Fatalf("no answer within %s", d)
	}
	var zero T
	return zero, nil
}

func TestBoardEvents(t *testing.T) {
	lb := newLiveBoard(t, nil)
	serverNow := boardNow.Add(42 * time.Second)
	h, err := web.New(web.Options{DB: filepath.Join(t.TempDir(), "none.db"), Location: time.UTC, Board: lb.src,
		BoardTick: 10 * time.Millisecond, MaxStreams: 2, Now: func() time.Time { return serverNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	srv := httptest.NewServer(h)
	defer srv.Close()
	defer h.EndStreams() // before srv.Close, which waits for the streams

	a := openEvents(t, srv.URL)
	first, err := within(t, 30*time.Second, a.next)
	if err != nil || !strings.Contains(first, `id="gpu-n1-3"`) || !strings.Contains(first, "○</span> #3 free") {
		t.Fatalf("first event: %v %.300s", err, first)
	}
	if strings.Contains(first, "<html") {
		t.Error("an event carries the whole page, not the board fragment")
	}
	// The page's clock offset is the server's time, sent with the event,
	// not the board's build time.
	if want := strconv.FormatInt(serverNow.UnixMilli(), 10); a.now != want {
		t.Errorf("server time before the first event: %q, want %q", a.now, want)
	}
	b := openEvents(t, srv.URL)
	if _, err := within(t, 30*time.Second, b.next); err != nil {
		t.Fatalf("second stream's first event: %v", err)
	}
	// Past MaxStreams: 503.
	if code, body := getJSON(t, srv.URL+"/api/v1/board/events", nil); code != http.StatusServiceUnavailable || !strings.Contains(string(body), "too many board streams") {
		t.Errorf("third stream: %d %s, want 503", code, body)
	}

	// A job starts on n1's free GPU: both streams get n1's row (and the
	// counts at the top) alone, not the whole board.
	writeSnapshot(t, lb.dir, record.Live{Node: "n1", GPUs: []record.LiveGPU{liveGPU(0, 87, 40960, 7), liveGPU(1, 0, 512, 7), liveGPU(2, 30, 2048, 8), liveGPU(3, 50, 1024, 12)}})
	lb.clock.set(boardNow.Add(time.Second)) // the source builds anew once its board is older than MaxAge
	for name, s := range map[string]*sseReader{"first": a, "second": b} {
		kind, ev, err := within3(t, 30*time.Second, s.nextEvent)
		if err != nil || kind != "nodes" || !strings.Contains(ev, "●</span> #3 busy") || !strings.Contains(ev, `id="board-top"`) ||
			!strings.Contains(ev, `id="kpi-running">3<`) {
			t.Errorf("%s stream after the job started: %v %s %.300s", name, err, kind, ev)
		}
		if strings.Contains(ev, `id="gpu-n2-0"`) || strings.Contains(ev, `id="legend"`) {
			t.Errorf("%s stream: the change of n1 sent unchanged sections: %.300s", name, ev)
		}
	}

	// The server stopping ends the streams.
	h.EndStreams()
	for name, s := range map[string]*sseReader{"first": a, "second": b} {
		if _, err := within(t, 30*time.Second, s.next); err == nil {
			t.Errorf("%s stream still sends after EndStreams", name)
		}
	}
}

func within3(t *testing.T, d time.Duration, fn func() (string, string, error)) (string, string, error) {
	t.Helper()
	type two struct{ kind, data string }
	r, err := within(t, d, func() (two, error) { k, v, err := fn(); return two{k, v}, err })
	return r.kind, r.data, err
}

// One client holds at most MaxStreamsPerClient streams: the peer's
// address, or behind a trusted proxy the address it forwards for.
func TestBoardEventsPerClient(t *testing.T) {
	loopback := []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8"), netip.MustParsePrefix("::1/128")}
	for _, tc := range []struct {
		name      string
		perClient int
		trusted   []netip.Prefix
		// xff of the streams opened; refused, the index of the first
		// refused (-1: none).
		xff     []string
		refused int
	}{
		{name: "one address", perClient: 2, xff: []string{"", "", ""}, refused: 2},
		{name: "forwarded by an untrusted peer", perClient: 2, xff: []string{"198.51.100.1", "198.51.100.2", "198.51.100.3"}, refused: 2},
		{name: "viewers behind a trusted proxy", perClient: 2, trusted: loopback,
			xff: []string{"198.51.100.1", "198.51.100.1", "198.51.100.2", "198.51.100.3", "198.51.100.1"}, refused: 4},
		{name: "one IPv6 /64 behind a trusted proxy", perClient: 2, trusted: loopback,
			xff: []string{"2001:db8::1", "2001:db8::2", "2001:db8::ffff:3", "2001:db8:0:1::1"}, refused: 2},
		{name: "no bound", perClient: -1, xff: []string{"", "", "", ""}, refused: -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lb := newLiveBoard(t, nil)
			srv := newBoardServer(t, web.Options{Board: lb.src, BoardTick: time.Hour, MaxStreams: 10, MaxStreamsPerClient: tc.perClient, TrustedProxies: tc.trusted})
			for i, xff := range tc.xff {
				req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/board/events", nil)
				if err != nil {
					t.Fatal(err)
				}
				if xff != "" {
					req.Header.Set("X-Forwarded-For", xff)
				}
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { resp.Body.Close() })
				if i != tc.refused {
					if resp.StatusCode != http.StatusOK {
						t.Fatalf("stream %d (%s): %d", i, xff, resp.StatusCode)
					}
					s := &sseReader{resp: resp, r: bufio.NewReader(resp.Body)}
					if _, err := within(t, 30*time.Second, s.next); err != nil {
						t.Fatal(err)
					}
					continue
				}
				body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
				want := fmt.Sprintf("this address holds %d board streams already (web.max_streams_per_client)", tc.perClient)
				if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), want) {
					t.Errorf("stream %d (%s): %d %s, want 503 %q", i, xff, resp.StatusCode, body, want)
				}
			}
		})
	}
}

// A stream opened later gets the board as it is then, its ages counted
// from the server's time, not the fragment of the last change: a stale
// node's age goes on.
func TestBoardEventsLateViewer(t *testing.T) {
	lb := newLiveBoard(t, nil)
	srv := newBoardServer(t, web.Options{Board: lb.src, BoardTick: 10 * time.Millisecond})
	n4 := strconv.FormatInt(boardNow.Add(-time.Minute).UnixMilli(), 10)
	a := openEvents(t, srv.URL)
	first, err := within(t, 30*time.Second, a.next)
	if want := `STALE: last snapshot <span data-t="` + n4 + `">60 s</span> ago`; err != nil || !strings.Contains(first, want) {
		t.Fatalf("first stream: %v, lacks %q in %.300s", err, want, first)
	}
	// Nothing changes but the time.
	lb.clock.set(boardNow.Add(10 * time.Minute))
	b := openEvents(t, srv.URL)
	late, err := within(t, 30*time.Second, b.next)
	if want := `STALE: last snapshot <span data-t="` + n4 + `">11 min</span> ago`; err != nil || !strings.Contains(late, want) {
		t.Errorf("later stream: %v, lacks %q in %.300s", err, want, late)
	}
}

// The live board's routes are never kept: a cached board shows GPUs
// free that were taken since.
func TestBoardNotCached(t *testing.T) {
	lb := newLiveBoard(t, nil)
	srv := newBoardServer(t, web.Options{Board: lb.src, MaxAge: 30 * time.Second})
	for _, p := range []string{"/", "/api/v1/board", "/api/v1/free"} {
		resp, err := http.Get(srv.URL + p)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Cache-Control"); resp.StatusCode != http.StatusOK || got != "no-store" {
			t.Errorf("%s: %d, Cache-Control %q, want 200 no-store", p, resp.StatusCode, got)
		}
	}
}

// A Slurm reason with a lone CR reaches the page whole: the stream's
// reader would end the data line there and lose the rest of the section.
func TestBoardEventsCR(t *testing.T) {
	lb := newLiveBoard(t, nil)
	st, _ := lb.slurm()
	for i := range st.Nodes {
		if st.Nodes[i].Name == "n3" {
			st.Nodes[i].Reason = "bad fan\rdata: <b>x</b>"
		}
	}
	lb.mu.Lock()
	lb.slurm = func() (slurmstate.State, error) { return st, nil }
	lb.mu.Unlock()
	lb.src.RefreshSlurm(context.Background())
	srv := newBoardServer(t, web.Options{Board: lb.src, BoardTick: time.Hour})
	resp, err := http.Get(srv.URL + "/api/v1/board/events")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// The first board event, read raw up to its blank line.
	raw, err := within(t, 30*time.Second, func() (string, error) {
		r := bufio.NewReader(resp.Body)
		var b strings.Builder
		for !strings.Contains(b.String(), "event: board\n") || !strings.HasSuffix(b.String(), "\n\n") {
			line, err := r.ReadString('\n')
			b.WriteString(line)
			if err != nil {
				return b.String(), err
			}
		}
		return b.String(), nil
	})
	if err != nil {
		t.Fatalf("stream: %v %.300s", err, raw)
	}
	if i := strings.IndexByte(raw, '\r'); i >= 0 {
		t.Errorf("a CR is sent raw: %q", raw[max(0, i-60):min(len(raw), i+60)])
	}
	if !strings.Contains(raw, "bad fan&#13;data: &lt;b&gt;x&lt;/b&gt;") {
		t.Error("the reason is not sent whole")
	}
}

// waitFor polls cond until it holds, failing the test past a generous
// deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	poll.True(t, what, 30*time.Second, 5*time.Millisecond, cond)
}

// A viewer leaving while the board is rebuilt changes no one's board:
// the Old copy its request got (with a problem line saying so) is not
// sent to the other streams.
func TestBoardEventsLeaverChangesNothing(t *testing.T) {
	lb := newLiveBoard(t, nil)
	var gateMu sync.Mutex
	var gate chan struct{}
	entered := make(chan struct{}, 1)
	lb.src = board.NewSource(board.SourceOptions{LiveDir: lb.dir, Now: lb.clock.now, MaxAge: time.Millisecond,
		Slurm: func(ctx context.Context) (slurmstate.State, error) { return lb.slurm() },
		Notes: func(ctx context.Context, now time.Time) ([]board.Note, error) {
			gateMu.Lock()
			g := gate
			gateMu.Unlock()
			if g != nil {
				select {
				case entered <- struct{}{}:
				default:
				}
				select {
				case <-g:
				case <-ctx.Done():
				}
			}
			return nil, nil
		}})
	lb.src.RefreshSlurm(context.Background())
	h, err := web.New(web.Options{DB: filepath.Join(t.TempDir(), "none.db"), Location: time.UTC, Board: lb.src,
		BoardTick: 10 * time.Millisecond, Now: func() time.Time { return boardNow }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.EndStreams(); srv.Close(); h.Close() })

	a := openEvents(t, srv.URL)
	if _, err := within(t, 30*time.Second, a.next); err != nil {
		t.Fatal(err)
	}
	// The next build hangs in the notes; a job starts on n1's free GPU.
	release := make(chan struct{})
	gateMu.Lock()
	gate = release
	gateMu.Unlock()
	writeSnapshot(t, lb.dir, record.Live{Node: "n1", GPUs: []record.LiveGPU{liveGPU(0, 87, 40960, 7), liveGPU(1, 0, 512, 7), liveGPU(2, 30, 2048, 8), liveGPU(3, 50, 1024, 12)}})
	lb.clock.set(boardNow.Add(time.Second))
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("no build started")
	}
	// A second viewer comes and goes during that build.
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/api/v1/board/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := within(t, 30*time.Second, func() (string, error) { return bufio.NewReader(resp.Body).ReadString('\n') }); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	waitFor(t, "second stream's end", func() bool { return h.Streams() == 1 })
	close(release)
	// The first viewer's next event is the job's start, not a problem
	// line about the leaver's request.
	kind, ev, err := within3(t, 30*time.Second, a.nextEvent)
	if err != nil || kind != "nodes" || !strings.Contains(ev, "●</span> #3 busy") {
		t.Errorf("after the build: %v %s %.300s", err, kind, ev)
	}
	if strings.Contains(ev, "request ended first") {
		t.Errorf("the leaver's Old board reached the first viewer: %.600s", ev)
	}
}
