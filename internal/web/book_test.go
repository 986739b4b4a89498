package web_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/notes"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/tlscert"
	"github.com/aicloud/gpusuite/internal/web"
	"github.com/aicloud/gpusuite/internal/webconfig"
)

// formsEnv is gpuacct serve's dashboard with web.forms on, as Mount
// serves it (the web config file's basic auth in front, ReadOnly,
// Secure), over a ledger whose writer the test runs (apply) as serve's
// ingest would: jobs 7 (alice, team-a) and 8 (bob, team-b) ran on n1,
// whose four GPUs are free on the board.
type formsEnv struct {
	url, dir, live string
	st             *store.Ledger
	now            time.Time
	// board is the board's clock: each pass of the writer moves it on,
	// so that the board is built again with the notes.
	board  *clock
	logins tlscert.Files
	pass   map[string]string
	// lang is the browser's Accept-Language; "" sends none.
	lang string
}

func newFormsEnv(t *testing.T, o web.Options) *formsEnv {
	t.Helper()
	now := boardNow
	t0 := reportfixture.T0
	db := reportfixture.BuildLedger(t, []reportfixture.Job{
		{ID: 7, User: "alice", Acct: "team-a", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 3600},
		{ID: 8, User: "bob", Acct: "team-b", Part: "gpu", Node: "n1", GPUs: 1, Start: t0, End: t0 + 3600},
	}, now)
	ctx := context.Background()
	st, err := store.Open(ctx, store.At(db))
	if err != nil {
		t.Fatal(err)
	}
	ro := store.At(db)
	ro.ReadOnly = true
	notesStore, err := store.Open(ctx, ro)
	if err != nil {
		t.Fatal(err)
	}
	e := &formsEnv{dir: filepath.Join(t.TempDir(), "requests"), live: t.TempDir(), st: st, now: now,
		pass: map[string]string{"alice": "a11ce", "bob": "b0b", "boss": "b055", "agentuser": "ag3nt"}}
	if err := requests.MakeQueues(e.dir, -1); err != nil {
		t.Fatal(err)
	}
	writeSnapshot(t, e.live, record.Live{Node: "n1", GPUs: []record.LiveGPU{liveGPU(0, 0, 0), liveGPU(1, 0, 0), liveGPU(2, 0, 0), liveGPU(3, 0, 0)}})
	e.board = &clock{t: now}
	src := board.NewSource(board.SourceOptions{LiveDir: e.live, Cluster: "c1", Now: e.board.now, MaxAge: time.Millisecond,
		Notes: notes.InForce(notesStore)})
	e.logins = tlscert.Write(t, false, e.pass, "")
	o.DB, o.Location, o.Now, o.Board, o.Cluster = db, time.UTC, func() time.Time { return now }, src, "c1"
	o.Users, o.Admins, o.Requests = webconfig.NewUsers(e.logins.Path), []string{"boss"}, e.dir
	h, err := web.New(o)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := web.NewServer(web.Secure(web.ReadOnly(h)), 30*time.Second)
	webconfig.Start(ln, srv, e.logins.Path, slog.New(slog.DiscardHandler), "forms test")
	e.url = "http://" + ln.Addr().String()
	t.Cleanup(func() { srv.Close(); h.Close(); notesStore.Close(); st.Close() })
	return e
}

// apply is the writer's pass over the request queue.
func (e *formsEnv) apply(t *testing.T) {
	t.Helper()
	euid := os.Geteuid()
	if _, err := requests.Apply(context.Background(), e.st, requests.Options{Dir: e.dir, Now: e.now, Cluster: "c1", LiveDir: e.live,
		Trusted: func(uid int) bool { return uid == 0 || uid == euid }}); err != nil {
		t.Fatal(err)
	}
	e.board.set(e.board.now().Add(time.Second))
}

// do sends a request as user (no login when ""), from origin when
// not ""; redirects are not followed. It returns the status, Location
// and body.
func (e *formsEnv) do(t *testing.T, method, path, user string, form url.Values, origin string) (int, string, string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, e.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if e.lang != "" {
		req.Header.Set("Accept-Language", e.lang)
	}
	if user != "" {
		req.SetBasicAuth(user, e.pass[user])
	}
	c := &http.Client{Timeout: 60 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s as %q: %v", method, path, user, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

var (
	tokenRE = regexp.MustCompile(`name="token" value="([^"]+)"`)
	errorRE = regexp.MustCompile(`<p id="error">([^<]*)</p>`)
)

// refusal is the one line an error page says, as a reader reads it.
func refusal(body string) string {
	m := errorRE.FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// refused is a request a form's action turns down: its method, user,
// Origin ("self": the server's own) and form, and the status and the
// refusal's words it answers with.
type refused struct {
	name, method, user, origin string
	form                       url.Values
	code                       int
	why                        string
}

// refuses sends each of cases to the action at path, each as a subtest,
// and checks its status and that its refusal says why.
func (e *formsEnv) refuses(t *testing.T, path string, cases []refused) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			origin := tc.origin
			if origin == "self" {
				origin = e.url
			}
			code, _, body := e.do(t, tc.method, path, tc.user, tc.form, origin)
			if why := refusal(body); code != tc.code || !strings.Contains(why, tc.why) {
				t.Errorf("%d %q, want %d saying %q", code, why, tc.code, tc.why)
			}
		})
	}
}

// token is user's form token, read from the page at path as a browser
// would.
func (e *formsEnv) token(t *testing.T, path, user string) string {
	t.Helper()
	code, _, body := e.do(t, http.MethodGet, path, user, nil, "")
	m := tokenRE.FindStringSubmatch(body)
	if code != http.StatusOK || m == nil {
		t.Fatalf("GET %s as %s: %d, no token in %.600s", path, user, code, body)
	}
	return m[1]
}

// post sends form to path as user from the server's own origin.
func (e *formsEnv) post(t *testing.T, path, user string, form url.Values) (int, string, string) {
	t.Helper()
	return e.do(t, http.MethodPost, path, user, form, e.url)
}

// notesInForce are the notes the ledger keeps in force, as gpuacct note
// list reads them.
func (e *formsEnv) notesInForce(t *testing.T) []store.Note {
	t.Helper()
	ns, err := e.st.Notes(context.Background(), e.now, false)
	if err != nil {
		t.Fatal(err)
	}
	return ns
}

// gpuState is n1 GPU i's state and note authors in the board's status
// document, as user reads it.
func (e *formsEnv) gpuState(t *testing.T, user string, i int) (string, []string) {
	t.Helper()
	code, _, body := e.do(t, http.MethodGet, "/api/v1/board", user, nil, "")
	var doc board.StatusDoc
	if err := json.Unmarshal([]byte(body), &doc); code != http.StatusOK || err != nil {
		t.Fatalf("board as %s: %d %v %.300s", user, code, err, body)
	}
	for _, n := range doc.Nodes {
		for _, g := range n.GPUs {
			if n.Name == "n1" && g.Index == i {
				var authors []string
				for _, nt := range g.Notes {
					authors = append(authors, nt.Author)
				}
				return string(g.State), authors
			}
		}
	}
	t.Fatalf("no n1 GPU %d on the board: %.300s", i, body)
	return "", nil
}

// TestBookFromWeb: alice books n1 GPU 1 from its page; once the writer
// applied it, the board reads it booked by alice for alice and for bob;
// bob may not free it (refused with alice's name) and gets no button
// for it; alice edits it; an admin frees it. Every refusal is one line.
func TestBookFromWeb(t *testing.T) {
	e := newFormsEnv(t, web.Options{})
	page := "/book?node=n1&gpu=1"
	if st, _ := e.gpuState(t, "alice", 1); st != "free" {
		t.Fatalf("n1 GPU 1 is %q before the booking, want free", st)
	}
	alice := e.token(t, page, "alice")
	code, loc, body := e.post(t, "/book/add", "alice", url.Values{"token": {alice}, "node": {"n1"}, "gpu": {"1"}, "until": {"4h"}, "text": {"NeurIPS <run>"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/book?") {
		t.Fatalf("alice books: %d %q %.300s, want 303 to the booking page", code, loc, body)
	}
	if _, _, body := e.do(t, http.MethodGet, loc, "alice", nil, ""); !strings.Contains(body, "Sent: the board shows it once") {
		t.Errorf("before the writer's pass the page does not say the booking was sent: %.2000s", body)
	}
	e.apply(t)
	if _, _, body := e.do(t, http.MethodGet, loc, "alice", nil, ""); !strings.Contains(body, "is kept; every board shows it") {
		t.Errorf("after the writer's pass the page does not say the booking is kept: %.2000s", body)
	}
	ns := e.notesInForce(t)
	if len(ns) != 1 || ns[0].Author != "alice" || ns[0].Text != "NeurIPS <run>" || ns[0].Until != e.now.Add(4*time.Hour) || ns[0].GPU == nil || *ns[0].GPU != 1 {
		t.Fatalf("notes in force after alice's booking: %+v", ns)
	}
	id := strconv.FormatInt(ns[0].ID, 10)
	for _, user := range []string{"alice", "bob"} {
		if st, authors := e.gpuState(t, user, 1); st != "booked" || len(authors) != 1 || authors[0] != "alice" {
			t.Errorf("as %s n1 GPU 1 is %q, noted by %v; want booked by alice", user, st, authors)
		}
	}

	bob := e.token(t, page, "bob")
	if _, _, body := e.do(t, http.MethodGet, page, "bob", nil, ""); strings.Contains(body, `id="free-`+id+`"`) || !strings.Contains(body, "NeurIPS &lt;run&gt;") {
		t.Errorf("bob's page: a Free button for alice's booking, or no booking: %.3000s", body)
	}
	for _, tc := range []struct {
		name, path string
		form       url.Values
	}{
		{"bob frees alice's", "/book/rm", url.Values{"token": {bob}, "node": {"n1"}, "gpu": {"1"}, "id": {id}}},
		{"bob edits alice's", "/book/add", url.Values{"token": {bob}, "node": {"n1"}, "gpu": {"1"}, "until": {"1h"}, "text": {"mine"}, "replaces": {id}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.post(t, tc.path, "bob", tc.form)
			if why := refusal(body); code != http.StatusForbidden || why != "booked by alice; only alice or an admin can remove it" {
				t.Errorf("%d %q, want 403 naming alice", code, why)
			}
		})
	}

	// alice edits hers: one booking, the new text, after the pass.
	if code, _, body := e.post(t, "/book/add", "alice", url.Values{"token": {alice}, "node": {"n1"}, "gpu": {"1"}, "until": {"2h"}, "text": {"NeurIPS, shorter"}, "replaces": {id}}); code != http.StatusSeeOther {
		t.Fatalf("alice edits: %d %.500s", code, body)
	}
	e.apply(t)
	if ns := e.notesInForce(t); len(ns) != 1 || ns[0].Text != "NeurIPS, shorter" || ns[0].Author != "alice" {
		t.Fatalf("after alice's edit: %+v", ns)
	} else {
		id = strconv.FormatInt(ns[0].ID, 10)
	}
	boss := e.token(t, page, "boss")
	if code, _, body := e.post(t, "/book/rm", "boss", url.Values{"token": {boss}, "node": {"n1"}, "gpu": {"1"}, "id": {id}}); code != http.StatusSeeOther {
		t.Fatalf("an admin frees alice's: %d %.500s", code, body)
	}
	e.apply(t)
	if ns := e.notesInForce(t); len(ns) != 0 {
		t.Errorf("after the admin freed it: %+v", ns)
	}
	if st, _ := e.gpuState(t, "bob", 1); st != "free" {
		t.Errorf("n1 GPU 1 is %q once freed, want free", st)
	}
}

// TestBookForged: a post without the token, with another user's, from
// another origin, with neither Origin nor Referer, without a login, or a
// GET of the action is refused, and nothing is filed; a text or time
// that gpuacct note add refuses is refused the same way; a body past the
// bound is 413.
func TestBookForged(t *testing.T) {
	e := newFormsEnv(t, web.Options{})
	alice := e.token(t, "/book?node=n1&gpu=0", "alice")
	ok := func() url.Values {
		return url.Values{"token": {alice}, "node": {"n1"}, "gpu": {"0"}, "until": {"4h"}, "text": {"mine"}}
	}
	with := func(k, v string) url.Values { f := ok(); f.Set(k, v); return f }
	e.refuses(t, "/book/add", []refused{
		{"no token", http.MethodPost, "alice", "self", with("token", ""), 403, "the form's token is missing or not yours"},
		{"bob with alice's token", http.MethodPost, "bob", "self", ok(), 403, "the form's token is missing or not yours"},
		{"another origin", http.MethodPost, "alice", "http://evil.example", ok(), 403, "the form comes from http://evil.example, not from this server"},
		{"no origin", http.MethodPost, "alice", "", ok(), 403, "the form carries neither Origin nor Referer"},
		{"no login", http.MethodPost, "", "self", ok(), 401, ""},
		{"GET of the action", http.MethodGet, "alice", "", nil, 405, "this form is sent by POST"},
		{"empty text", http.MethodPost, "alice", "self", with("text", "  "), 400, "text is empty"},
		{"281 characters", http.MethodPost, "alice", "self", with("text", strings.Repeat("x", 281)), 400, "text is 281 characters, more than 280"},
		{"a newline", http.MethodPost, "alice", "self", with("text", "a\nb"), 400, "text holds a control character"},
		{"right-to-left override", http.MethodPost, "alice", "self", with("text", "a\u202eb"), 400, "invisible format character"},
		{"until past", http.MethodPost, "alice", "self", with("until", "-4h"), 400, "is not in the future"},
		{"until too far", http.MethodPost, "alice", "self", with("until", "100d"), 400, "more than 90 days ahead"},
		{"bad node", http.MethodPost, "alice", "self", with("node", "../etc"), 400, "holds '/'"},
		{"bad gpu", http.MethodPost, "alice", "self", with("gpu", "1024"), 400, "is not an index 0..1023"},
		{"too large", http.MethodPost, "alice", "self", with("text", strings.Repeat("x", 20<<10)), 413, "more than 16384 bytes"},
	})
	e.apply(t)
	if ns := e.notesInForce(t); len(ns) != 0 {
		t.Errorf("refused posts booked %+v", ns)
	}
}

// TestBookFlood: one user's posts past the burst are refused with 429
// (the test's clock stands still, so no token comes back), while
// another user still posts.
func TestBookFlood(t *testing.T) {
	e := newFormsEnv(t, web.Options{})
	alice, bob := e.token(t, "/book?node=n1", "alice"), e.token(t, "/book?node=n1", "bob")
	codes := map[int]int{}
	for i := range 30 {
		code, _, _ := e.post(t, "/book/add", "alice", url.Values{"token": {alice}, "node": {"n1"}, "until": {"1h"}, "text": {"flood " + strconv.Itoa(i)}})
		codes[code]++
	}
	if codes[http.StatusSeeOther] != 10 || codes[http.StatusTooManyRequests] != 20 {
		t.Errorf("30 posts at once: %v, want 10 filed (303) and 20 refused (429)", codes)
	}
	if code, _, body := e.post(t, "/book/add", "bob", url.Values{"token": {bob}, "node": {"n1"}, "until": {"1h"}, "text": {"bob's"}}); code != http.StatusSeeOther {
		t.Errorf("bob after alice's flood: %d %.300s, want 303", code, body)
	}
}

// TestFormsOff: without web.forms the booking page offers no form but
// the command, and a post to an action is refused: the dashboard only
// reads. Any other path refuses a POST as before (ReadOnly).
func TestFormsOff(t *testing.T) {
	h, err := web.New(web.Options{DB: filepath.Join(t.TempDir(), "none.db"), Location: time.UTC})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.Secure(web.ReadOnly(h)))
	t.Cleanup(func() { srv.Close(); h.Close() })
	post := func(path string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(url.Values{"token": {"x"}, "node": {"n1"}, "until": {"1h"}, "text": {"x"}}.Encode()))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.URL)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := post("/book/add"); code != http.StatusForbidden || !strings.Contains(refusal(body), "forms are off (web.forms)") {
		t.Errorf("POST /book/add with the forms off: %d %.500s, want 403", code, body)
	}
	for _, path := range []string{"/book", "/job/c1/7", "/book/add/x", "/job/c1/7/ignore/x"} {
		if code, _ := post(path); code != http.StatusMethodNotAllowed {
			t.Errorf("POST %s: %d, want 405", path, code)
		}
	}
}

// TestBookRefusedByWriter: what only the writer can check (the GPU is
// not one of the node's) comes back on the booking page as its refusal,
// and nobody else's page says anything of alice's request.
func TestBookRefusedByWriter(t *testing.T) {
	e := newFormsEnv(t, web.Options{})
	alice := e.token(t, "/book?node=n1&gpu=7", "alice")
	code, loc, body := e.post(t, "/book/add", "alice", url.Values{"token": {alice}, "node": {"n1"}, "gpu": {"7"}, "until": {"1h"}, "text": {"x"}})
	if code != http.StatusSeeOther {
		t.Fatalf("alice books n1 GPU 7: %d %q", code, refusal(body))
	}
	e.apply(t)
	_, _, body = e.do(t, http.MethodGet, loc, "alice", nil, "")
	if want := "node n1 has 4 GPU(s), 0..3: GPU 7 is not one of them"; !strings.Contains(html.UnescapeString(body), want) || !strings.Contains(body, `class="card error" id="book"`) {
		t.Errorf("alice's page after the writer refused does not say %q as a refusal: %.2000s", want, body)
	}
	if _, _, body := e.do(t, http.MethodGet, loc, "bob", nil, ""); strings.Contains(body, `id="book-status"`) {
		t.Errorf("bob's page at alice's request's address says what became of it: %.2000s", body)
	}
}
