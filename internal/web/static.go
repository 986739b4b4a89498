package web

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"mime"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	kgzip "github.com/klauspost/compress/gzip"
)

// staticFiles serves the embedded style sheet and script with an ETag
// and a day of caching; pages link them with ?v=<hash>, so a new binary's
// files are fetched at once.
type staticFiles struct {
	files map[string]staticFile
	// Version is a hash over all files, for the ?v= of links.
	Version string
	// modified is the Last-Modified of every file: embedded files have
	// no time of their own, and none changes while this binary runs.
	modified time.Time
}

type staticFile struct {
	data  []byte
	etag  string
	ctype string
}

func newStatic() (*staticFiles, error) {
	s := &staticFiles{files: map[string]staticFile{}, modified: time.Now().UTC().Truncate(time.Second)}
	all := sha256.New()
	err := fs.WalkDir(assets, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(assets, p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		all.Write(sum[:])
		ct := mime.TypeByExtension(path.Ext(p))
		if ct == "" {
			ct = "application/octet-stream"
		}
		s.files["/"+p] = staticFile{data: b, etag: `"` + hex.EncodeToString(sum[:8]) + `"`, ctype: ct}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("web: embedded static files: %w", err)
	}
	s.Version = hex.EncodeToString(all.Sum(nil)[:6])
	return s, nil
}

// ServeHTTP leaves conditional and range requests to http.ServeContent.
func (s *staticFiles) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, ok := s.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("ETag", f.etag)
	w.Header().Set("Cache-Control", "public, max-age=86400")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", f.ctype)
	http.ServeContent(w, r, r.URL.Path, s.modified, bytes.NewReader(f.data))
}

// gzipped compresses answers for clients that accept gzip: JSON with
// klauspost/compress at its default level (a status document of 10,000
// GPUs encoded for one viewer: 269 kB in 11 ms, where compress/gzip's
// fastest level took 13 ms for 373 kB and its default 35 ms), pages
// with compress/gzip at its default (the board's last-hour marks
// compress half as well at the fastest).
func gzipped(next http.Handler) http.Handler {
	pool := sync.Pool{New: func() any { return gzip.NewWriter(io.Discard) }}
	fast := sync.Pool{New: func() any { return kgzip.NewWriter(io.Discard) }}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Add("Vary", "Accept-Encoding")
		if !acceptsGzip(r.Header.Get("Accept-Encoding")) {
			next.ServeHTTP(w, r)
			return
		}
		gw := &gzipWriter{ResponseWriter: w, pools: [2]*sync.Pool{&pool, &fast}}
		next.ServeHTTP(gw, r)
		gw.finish()
	})
}

// gzipCompressor is a gzip writer of either package.
type gzipCompressor interface {
	io.WriteCloser
	Reset(io.Writer)
}

func acceptsGzip(h string) bool {
	for _, p := range strings.Split(h, ",") {
		name, q, _ := strings.Cut(strings.TrimSpace(p), ";")
		if strings.TrimSpace(name) == "gzip" && strings.ReplaceAll(q, " ", "") != "q=0" {
			return true
		}
	}
	return false
}

// gzipWriter starts compressing at the first write of a 200 answer with
// a body; 304s, errors without a body and 206s (a range is of the plain
// file) pass through.
type gzipWriter struct {
	http.ResponseWriter
	// pools are the writers for pages and for JSON; gz is taken from
	// one at the answer's first write.
	pools   [2]*sync.Pool
	gz      gzipCompressor
	from    *sync.Pool
	code    int
	started bool
	plain   bool
}

func (g *gzipWriter) WriteHeader(code int) {
	if g.code == 0 {
		g.code = code
	}
}

func (g *gzipWriter) Write(b []byte) (int, error) {
	if g.code == 0 {
		g.code = http.StatusOK
	}
	if !g.started && !g.plain {
		if g.code == http.StatusNotModified || g.code == http.StatusNoContent || g.code == http.StatusPartialContent {
			g.plain = true
		} else {
			h := g.Header()
			h.Del("Content-Length")
			h.Set("Content-Encoding", "gzip")
			g.from = g.pools[0]
			if strings.HasPrefix(h.Get("Content-Type"), "application/json") {
				g.from = g.pools[1]
			}
			g.gz = g.from.Get().(gzipCompressor)
			g.gz.Reset(g.ResponseWriter)
			g.started = true
		}
		g.ResponseWriter.WriteHeader(g.code)
	}
	if g.plain {
		return g.ResponseWriter.Write(b)
	}
	return g.gz.Write(b)
}

// precompressed is the writer for an answer its handler gzipped itself:
// when w is gzipped's writer, that writer passes the bytes on as they
// are, the answer says gzip, and ok is true; else w itself, false.
func precompressed(w http.ResponseWriter) (_ http.ResponseWriter, ok bool) {
	gw, ok := w.(*gzipWriter)
	if !ok {
		return w, false
	}
	gw.plain = true
	gw.Header().Set("Content-Encoding", "gzip")
	return gw.ResponseWriter, true
}

func (g *gzipWriter) finish() {
	switch {
	case g.started:
		_ = g.gz.Close()
		g.from.Put(g.gz)
	case !g.plain && g.code != 0:
		g.ResponseWriter.WriteHeader(g.code)
	}
}
