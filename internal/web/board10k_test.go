package web_test

import (
	"bufio"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/web"
)

// Bounds of a 10,000-GPU board (docs/performance.md): what a browser is
// sent first, compressed as served.
const (
	maxFirstEventGz = 300 << 10
	maxPageGz       = 300 << 10
)

// boardOfN serves the board of clusterN(nodes).
func boardOfN(t *testing.T, nodes int) *httptest.Server {
	t.Helper()
	dir, st := clusterN(t, nodes)
	src := board.NewSource(board.SourceOptions{LiveDir: dir, Now: func() time.Time { return boardNow },
		Slurm: func(context.Context) (slurmstate.State, error) { return st, nil }})
	src.RefreshSlurm(context.Background())
	return newBoardServer(t, web.Options{Board: src})
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += n
	return n, err
}

// getGzip asks for url taking gzip, as a browser does, and returns the
// response with its body counted as it came on the wire.
func getGzip(t *testing.T, ctx context.Context, url string) (*http.Response, *countingReader) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Encoding", "gzip, deflate, br")
	c := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Encoding") != "gzip" {
		t.Fatalf("GET %s: %d, Content-Encoding %q", url, resp.StatusCode, resp.Header.Get("Content-Encoding"))
	}
	return resp, &countingReader{r: resp.Body}
}

// TestBoard10kBounds: the page and the event stream's first event of a
// 10,000-GPU board (1,250 nodes × 8) are each under 300 KiB as served
// (gzip) and hold every GPU's cell; it logs their sizes and the time to
// serve the page and the status document (first and next request).
func TestBoard10kBounds(t *testing.T) {
	srv := boardOfN(t, 1250)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	start := time.Now()
	resp, wire := getGzip(t, ctx, srv.URL+"/")
	zr, err := gzip.NewReader(wire)
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	pageTook := time.Since(start)
	resp.Body.Close()
	if wire.n > maxPageGz {
		t.Errorf("the page is %d bytes gzipped, more than %d", wire.n, maxPageGz)
	}
	if n := strings.Count(string(page), `class="gpu mini s-`); n != 10_000 {
		t.Errorf("the page has %d cells, want 10000", n)
	}
	t.Logf("page of 10000 GPUs: %d bytes, %d gzipped, served in %s", len(page), wire.n, pageTook.Round(time.Millisecond))

	// The status document: the first request encodes and gzips it for
	// the build, the next is served those bytes.
	for _, which := range []string{"first", "next"} {
		start = time.Now()
		_, wire := getGzip(t, ctx, srv.URL+"/api/v1/board")
		if _, err := io.Copy(io.Discard, wire); err != nil {
			t.Fatal(err)
		}
		t.Logf("status document of 10000 GPUs, %s request: %d bytes gzipped, served in %s", which, wire.n, time.Since(start).Round(time.Millisecond))
	}

	_, wire = getGzip(t, ctx, srv.URL+"/api/v1/board/events")
	zr, err = gzip.NewReader(wire)
	if err != nil {
		t.Fatal(err)
	}
	// The first "board" event, to its blank line.
	r, raw, inBoard := bufio.NewReader(zr), 0, false
	var first strings.Builder
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended before the board: %v", err)
		}
		raw += len(line)
		if line == "event: board\n" {
			inBoard = true
		}
		if inBoard {
			if line == "\n" {
				break
			}
			first.WriteString(line)
		}
	}
	// The reader reads ahead: wire.n is at most a buffer more than the
	// event's own bytes, so the bound holds for the event too.
	if wire.n > maxFirstEventGz {
		t.Errorf("the first event came in %d bytes gzipped, more than %d", wire.n, maxFirstEventGz)
	}
	if n := strings.Count(first.String(), `class="gpu mini s-`); n != 10_000 {
		t.Errorf("the first event has %d cells, want 10000", n)
	}
	t.Logf("first event of 10000 GPUs: %d bytes, %d gzipped", raw, wire.n)
}
