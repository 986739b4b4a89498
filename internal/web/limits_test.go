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
