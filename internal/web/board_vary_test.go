package web_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestVaryAcceptLanguage: the answers whose language the browser picks
// (the board, its event stream, the accounting pages, an error page) say
// so to caches, which must not give one reader's language to another.
func TestVaryAcceptLanguage(t *testing.T) {
	f := newFixture(t, time.Now())
	f.serve(t)
	for _, tc := range []struct{ name, path string }{
		{"board", "/"},
		{"events", "/api/v1/board/events"},
		{"accounting", "/accounting"},
		{"not found", "/no-such-page"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url(tc.path), nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Accept-Language", "ja")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			// The stream's headers are enough: it is not read.
			cancel()
			resp.Body.Close()
			var vary []string
			for _, v := range resp.Header.Values("Vary") {
				for _, p := range strings.Split(v, ",") {
					vary = append(vary, strings.TrimSpace(p))
				}
			}
			if !slices.Contains(vary, "Accept-Language") {
				t.Errorf("GET %s: %d, Vary %q lacks Accept-Language", tc.path, resp.StatusCode, vary)
			}
		})
	}
}
