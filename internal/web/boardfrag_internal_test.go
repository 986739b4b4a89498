package web

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/snapshot"
)

// TestRenderFragOnce: the board fragment is rendered once a build for
// every viewer who sees the same names (all, or none), kept apart for
// each; one private viewer's, with the names they may see, each time. A
// gzipped page leaves the fragment's deflated tail for the next.
func TestRenderFragOnce(t *testing.T) {
	dir := t.TempDir()
	u := func(v uint32) *uint32 { return &v }
	l := record.Live{Schema: record.LiveSchema, Cluster: "c1", Node: "n1", Time: viewNow.Add(-4 * time.Second), Interval: 10,
		GPUs: []record.LiveGPU{{Index: 0, UUID: "GPU-0", Model: "NVIDIA H100", Util: u(80),
			Jobs: []record.LiveJob{{Job: 7, User: "carol", Account: "physics", Start: viewNow.Add(-time.Hour)}}}}}
	snapshot.Write(t, dir, l)
	src := board.NewSource(board.SourceOptions{LiveDir: dir, Now: func() time.Time { return viewNow }, MaxAge: time.Hour})
	h, err := New(Options{DB: filepath.Join(t.TempDir(), "none.db"), Location: time.UTC, Now: func() time.Time { return viewNow }, Board: src})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	one := *h
	one.v = viewer{private: true, name: "alice"}
	s := src.Current(context.Background())
	for _, tc := range []struct {
		name      string
		h         *Handler
		shared    bool
		showsUser bool
	}{
		{"names", h, true, true},
		{"no names", h.anonymous(), true, false},
		{"one private viewer", &one, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := tc.h.renderFrag(s)
			if err != nil {
				t.Fatal(err)
			}
			b, err := tc.h.renderFrag(s)
			if err != nil {
				t.Fatal(err)
			}
			if shared := &a[0] == &b[0]; shared != tc.shared || string(a) != string(b) {
				t.Errorf("two renderings share their bytes: %t, want %t; equal: %t", shared, tc.shared, string(a) == string(b))
			}
			if got := strings.Contains(string(a), "carol"); got != tc.showsUser {
				t.Errorf("the fragment names carol: %t, want %t", got, tc.showsUser)
			}
		})
	}

	// A page gzipped deflates the fragment after its clock, kept with
	// the build's fragment for the next page.
	req := httptest.NewRequest(http.MethodGet, "/", nil)
	req.Header.Set("Accept-Encoding", "gzip")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	f, err := h.fragOf(s)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusOK || rec.Header().Get("Content-Encoding") != "gzip" || f.tail.z == nil {
		t.Errorf("a gzipped page: %d, %q, the fragment's tail deflated: %t", rec.Code, rec.Header().Get("Content-Encoding"), f.tail.z != nil)
	}
}
