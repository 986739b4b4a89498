package web_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/klauspost/compress/gzip"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/web"
)

// served is an answer as it came on the wire, not uncompressed.
type served struct {
	code       int
	enc, etag  string
	body, text []byte // text: body uncompressed
}

// getRaw asks for url with the headers hdr (name, value, ...) and a
// client that leaves the body as sent.
func getRaw(t *testing.T, url string, hdr ...string) served {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	c := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableCompression: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s := served{code: resp.StatusCode, enc: resp.Header.Get("Content-Encoding"), etag: resp.Header.Get("ETag")}
	if s.body, err = io.ReadAll(io.LimitReader(resp.Body, 64<<20)); err != nil {
		t.Fatal(err)
	}
	s.text = s.body
	if s.enc == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(s.body))
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		if s.text, err = io.ReadAll(io.LimitReader(zr, 256<<20)); err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
	}
	return s
}

// gzipDefault is b gzipped as the board's status document is served:
// klauspost/compress at level 6 (boardapi.go's docGzipLevel).
func gzipDefault(t *testing.T, b []byte) []byte {
	t.Helper()
	var z bytes.Buffer
	zw, err := gzip.NewWriterLevel(&z, 6)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := zw.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return z.Bytes()
}

// TestBoardDocServed: the whole board's status document is served as
// made once a build: gzipped at the default level to a client that takes
// gzip, plain to one that does not, the same document with one ETag, 304
// to a client that names it; after a rebuild the new document, whatever
// ETag the client holds.
func TestBoardDocServed(t *testing.T) {
	boardSubtests(t, []string{"/api/v1/board", "/api/v1/board?last_hour=1"}, func(t *testing.T, srv *httptest.Server, path string, rebuild func()) {
		plain := getRaw(t, srv.URL+path, "Accept-Encoding", "identity")
		if plain.code != http.StatusOK || plain.enc != "" || plain.etag == "" || !bytes.Contains(plain.body, []byte(`"schema": "gpusuite.status/v1"`)) {
			t.Fatalf("plain: %d, encoding %q, ETag %q, %.200s", plain.code, plain.enc, plain.etag, plain.body)
		}
		zipped := getRaw(t, srv.URL+path, "Accept-Encoding", "gzip, deflate, br")
		if zipped.code != http.StatusOK || zipped.enc != "gzip" || zipped.etag != plain.etag {
			t.Fatalf("gzipped: %d, encoding %q, ETag %q (plain %q)", zipped.code, zipped.enc, zipped.etag, plain.etag)
		}
		if diff := cmp.Diff(string(plain.body), string(zipped.text)); diff != "" {
			t.Errorf("gzipped, uncompressed (-plain +gzipped):\n%s", diff)
		}
		if !bytes.Equal(zipped.body, gzipDefault(t, plain.body)) {
			t.Errorf("gzipped body of %d bytes is not the plain one gzipped as served (%d)", len(zipped.body), len(gzipDefault(t, plain.body)))
		}
		bare := strings.TrimPrefix(plain.etag, "W/")
		for _, tc := range []struct {
			name, ifNoneMatch string
			want              int
		}{
			{"its etag", plain.etag, http.StatusNotModified},
			{"in a list, strong", `"other", ` + bare, http.StatusNotModified},
			{"any", "*", http.StatusNotModified},
			{"another", `W/"other"`, http.StatusOK},
		} {
			t.Run(tc.name, func(t *testing.T) {
				for _, enc := range []string{"identity", "gzip"} {
					got := getRaw(t, srv.URL+path, "Accept-Encoding", enc, "If-None-Match", tc.ifNoneMatch)
					if got.code != tc.want || got.etag != plain.etag {
						t.Errorf("%s: %d, ETag %q, want %d and %q", enc, got.code, got.etag, tc.want, plain.etag)
					}
					if tc.want == http.StatusNotModified && len(got.body) > 0 {
						t.Errorf("%s: 304 with a body of %d bytes", enc, len(got.body))
					}
				}
			})
		}

		// A job starts on n2: the next build's document, to a client
		// holding the last one's ETag too.
		rebuild()
		for _, enc := range []string{"gzip", "identity"} {
			got := getRaw(t, srv.URL+path, "Accept-Encoding", enc, "If-None-Match", plain.etag)
			if got.code != http.StatusOK || got.etag == plain.etag || !bytes.Contains(got.text, []byte("31337")) {
				t.Errorf("%s after a rebuild: %d, ETag %q (before %q), job 31337 shown: %t", enc, got.code, got.etag, plain.etag, bytes.Contains(got.text, []byte("31337")))
			}
		}
	})
}

// TestBoardPageFrag: the page holds the fragment the event stream's
// first event sends, in the viewer's language, with the page's clock,
// gzipped or plain the same; after a rebuild it shows the new board.
func TestBoardPageFrag(t *testing.T) {
	boardSubtests(t, []string{"en", "ja"}, func(t *testing.T, srv *httptest.Server, lang string, rebuild func()) {
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/api/v1/board/events", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept-Language", lang)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		kind, frag, err := within3(t, 30*time.Second, (&sseReader{resp: resp, r: bufio.NewReader(resp.Body)}).nextEvent)
		if err != nil || kind != "board" {
			t.Fatalf("first event: %q, %v", kind, err)
		}
		page := getRaw(t, srv.URL+"/", "Accept-Language", lang, "Accept-Encoding", "identity")
		want := strings.Replace(frag, `data-now="0"`, fmt.Sprintf(`data-now="%d"`, boardNow.UnixMilli()), 1)
		if page.code != http.StatusOK || page.enc != "" || !strings.Contains(string(page.text), `<div id="board" aria-live="off">`+want) {
			t.Errorf("the page (%d, %q) does not hold the first event's fragment with its clock: %.300s", page.code, page.enc, page.text)
		}
		// Gzipped: its shell around the fragment's blocks made once.
		zipped := getRaw(t, srv.URL+"/", "Accept-Language", lang, "Accept-Encoding", "gzip")
		if zipped.code != http.StatusOK || zipped.enc != "gzip" {
			t.Errorf("the page gzipped: %d, %q", zipped.code, zipped.enc)
		}
		if diff := cmp.Diff(string(page.text), string(zipped.text)); diff != "" {
			t.Errorf("the page (-plain +gzipped):\n%s", diff)
		}

		rebuild()
		if page := getRaw(t, srv.URL+"/", "Accept-Language", lang); !bytes.Contains(page.text, []byte("31337")) {
			t.Errorf("the page after a rebuild does not show job 31337: %.300s", page.text)
		}
	})
}

// boardSubtests runs f for each of names as a subtest on one live board
// and its server, n2's GPUs idle, each name's boards after the last's.
// f's rebuild starts job 31337 on n2 and moves the clock past MaxAge, so
// that the next read builds the board anew.
func boardSubtests(t *testing.T, names []string, f func(t *testing.T, srv *httptest.Server, name string, rebuild func())) {
	lb := newLiveBoard(t, nil)
	srv := newBoardServer(t, web.Options{Board: lb.src})
	for i, name := range names {
		t.Run(name, func(t *testing.T) {
			at := boardNow.Add(time.Duration(2*i) * time.Second) // each name's boards after the last's
			lb.clock.set(at)
			writeSnapshot(t, lb.dir, record.Live{Node: "n2", GPUs: []record.LiveGPU{liveGPU(0, 0, 0), liveGPU(1, 0, 0)}})
			f(t, srv, name, func() {
				writeSnapshot(t, lb.dir, record.Live{Node: "n2", GPUs: []record.LiveGPU{liveGPU(0, 60, 4096, 31337), liveGPU(1, 0, 0)}})
				lb.clock.set(at.Add(time.Second)) // older than MaxAge: built anew
			})
		})
	}
}
