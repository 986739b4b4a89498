package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestStaticConditional: the static files answer conditional and range
// requests as net/http's ServeContent does: 304 for a matching ETag or a
// date not before Last-Modified, 206 with the asked bytes (never gzipped,
// as a range is of the plain file) and 404 for a file that is not there.
func TestStaticConditional(t *testing.T) {
	st, err := newStatic()
	if err != nil {
		t.Fatal(err)
	}
	h := gzipped(st)
	get := func(t *testing.T, hdr map[string]string) *http.Response {
		t.Helper()
		req := httptest.NewRequest("GET", "/static/style.css", nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	first := get(t, nil)
	whole, _ := io.ReadAll(first.Body)
	etag, modified := first.Header.Get("ETag"), first.Header.Get("Last-Modified")
	if first.StatusCode != http.StatusOK || etag == "" || modified == "" || len(whole) < 10 {
		t.Fatalf("first answer: %d %v (%d bytes)", first.StatusCode, first.Header, len(whole))
	}
	type answer struct {
		Code            int
		Body, Encoding  string
		ContentRange    string
		HasCacheControl bool
	}
	for _, tc := range []struct {
		name string
		hdr  map[string]string
		want answer
	}{
		{"if-none-match", map[string]string{"If-None-Match": etag, "Accept-Encoding": "gzip"},
			answer{Code: http.StatusNotModified, HasCacheControl: true}},
		{"if-modified-since", map[string]string{"If-Modified-Since": modified, "Accept-Encoding": "gzip"},
			answer{Code: http.StatusNotModified, HasCacheControl: true}},
		{"older copy", map[string]string{"If-Modified-Since": "Mon, 02 Jan 2006 15:04:05 GMT"},
			answer{Code: http.StatusOK, Body: string(whole), HasCacheControl: true}},
		{"range", map[string]string{"Range": "bytes=2-9", "Accept-Encoding": "gzip"},
			answer{Code: http.StatusPartialContent, Body: string(whole[2:10]),
				ContentRange: "bytes 2-9/" + strconv.Itoa(len(whole)), HasCacheControl: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(t, tc.hdr)
			b, _ := io.ReadAll(resp.Body)
			got := answer{Code: resp.StatusCode, Body: string(b), Encoding: resp.Header.Get("Content-Encoding"),
				ContentRange: resp.Header.Get("Content-Range"), HasCacheControl: resp.Header.Get("Cache-Control") != ""}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
		})
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/static/nothere.css", nil))
	if rec.Code != http.StatusNotFound {
		t.Errorf("missing file: %d", rec.Code)
	}
}
