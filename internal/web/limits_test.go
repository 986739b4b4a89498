package web

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/webconfig"
)

// TestLimiter: with every slot taken a request waits queueWait, then
// gets 503 with Retry-After and a one-line error; an admitted request
// runs with a deadline.
func TestLimiter(t *testing.T) {
	l := newLimiter(1, 5*time.Second)
	inside := make(chan time.Duration, 1)
	release := make(chan struct{})
	h := l.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		dl, ok := r.Context().Deadline()
		if !ok {
			dl = time.Now().Add(time.Hour)
		}
		inside <- time.Until(dl)
		<-release
		w.WriteHeader(http.StatusOK)
	}), (&Handler{o: Options{Log: slog.New(slog.DiscardHandler)}}).apiHandler(func(http.ResponseWriter, *http.Request) error { return errBusy }).ServeHTTP)
	first := make(chan int, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/report/teams", nil))
		first <- rec.Code
	}()
	if left := <-inside; left <= 0 || left > 5*time.Second {
		t.Errorf("admitted request's deadline is %s away, want within the 5s timeout", left)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/report/users", nil))
	var e struct {
		Error string `json:"error"`
	}
	if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
		t.Errorf("second request with the slot taken: %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
	}
	if json.Unmarshal(rec.Body.Bytes(), &e) != nil || !strings.Contains(e.Error, "server busy") || strings.Contains(e.Error, "\n") {
		t.Errorf("busy answer %q", rec.Body.String())
	}
	close(release)
	if code := <-first; code != http.StatusOK {
		t.Errorf("first request: %d", code)
	}
	// The slot is free again.
	go func() { <-inside }()
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/v1/report/teams", nil))
	if rec.Code != http.StatusOK {
		t.Errorf("after release: %d", rec.Code)
	}
}

// TestNewServerTimeouts: every timeout of the server is set.
func TestNewServerTimeouts(t *testing.T) {
	s := NewServer(http.NotFoundHandler(), 0)
	if s.ReadHeaderTimeout <= 0 || s.ReadTimeout <= 0 || s.WriteTimeout <= DefaultTimeout || s.IdleTimeout <= 0 || s.MaxHeaderBytes != webconfig.MaxHeaderBytes {
		t.Errorf("server timeouts: header %s, read %s, write %s, idle %s, max header %d", s.ReadHeaderTimeout, s.ReadTimeout, s.WriteTimeout, s.IdleTimeout, s.MaxHeaderBytes)
	}
}

// TestLimiterPerClient: a client holding its share of the slots waits,
// then gets 503, while another client is admitted at once; a client's
// entry is dropped when its last request ends.
func TestLimiterPerClient(t *testing.T) {
	l := newLimiter(4, 5*time.Second)
	l.perClient = perClientOf(4)
	inside := make(chan string, 4)
	release := make(chan struct{})
	h := l.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inside <- r.RemoteAddr
		<-release
		w.WriteHeader(http.StatusOK)
	}), (&Handler{o: Options{Log: slog.New(slog.DiscardHandler)}}).apiHandler(func(http.ResponseWriter, *http.Request) error { return errBusy }).ServeHTTP)
	from := func(addr string) *http.Request {
		r := httptest.NewRequest("GET", "/api/v1/report/users", nil)
		r.RemoteAddr = addr
		return r
	}
	codes := make(chan int, 4)
	serve := func(addr string) {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, from(addr))
		codes <- rec.Code
	}
	for _, addr := range []string{"192.0.2.1:1000", "192.0.2.1:1001"} {
		go serve(addr)
		<-inside
	}
	// A third request of the same client is refused after queueWait,
	// though two slots of all are free.
	third := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, from("192.0.2.1:1002"))
		third <- rec
	}()
	select {
	case got := <-inside:
		t.Fatalf("%s admitted beyond its client's share", got)
	case rec := <-third:
		if rec.Code != http.StatusServiceUnavailable || rec.Header().Get("Retry-After") == "" {
			t.Errorf("third request of one client: %d, Retry-After %q; want 503 with Retry-After", rec.Code, rec.Header().Get("Retry-After"))
		}
	case <-time.After(30 * time.Second):
		t.Fatal("third request of one client: no answer within 30 s")
	}
	// Another client is admitted while the first holds its share: not
	// refused after queueWait.
	go serve("198.51.100.7:2000")
	select {
	case got := <-inside:
		if got != "198.51.100.7:2000" {
			t.Errorf("admitted %s, want the other client", got)
		}
	case code := <-codes:
		t.Fatalf("another client, with slots free: %d", code)
	case <-time.After(30 * time.Second):
		t.Fatal("another client not admitted within 30 s")
	}
	close(release)
	for i := 0; i < 3; i++ {
		if code := <-codes; code != http.StatusOK {
			t.Errorf("admitted request: %d", code)
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.clients) != 0 {
		t.Errorf("%d clients kept after their requests ended", len(l.clients))
	}
}
