package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/klauspost/compress/gzip"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/notes"
)

// maxNodeParams bounds the ?node= of one /api/v1/board request.
const maxNodeParams = 1000

// onlyParams refuses a query parameter the route does not take: a typo
// must not pass as "no filter".
func onlyParams(v url.Values, allowed ...string) error {
	var bad []string
	for k := range v {
		if !contains(allowed, k) {
			bad = append(bad, k)
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	if len(allowed) == 0 {
		return badRequest("unknown parameter %q: this takes no parameter", bad[0])
	}
	return badRequest("unknown parameter %q: this takes %s", bad[0], strings.Join(allowed, ", "))
}

// flagParam is the query parameter name as a flag: absent, 0 or false;
// 1 or true.
func flagParam(q url.Values, name string) (bool, error) {
	switch a := q.Get(name); a {
	case "", "0", "false":
		return false, nil
	case "1", "true":
		return true, nil
	default:
		return false, badRequest("%s %q is not 1 or 0", name, a)
	}
}

// GET /api/v1/board[?node=N...][&last_hour=1]: gpusuite.status/v1, as
// gpuacct status --format json; last_hour adds each GPU's strip and each
// node's state changes.
func (h *Handler) apiBoard(w http.ResponseWriter, r *http.Request) error {
	if h.o.Board == nil {
		return errBoardOff()
	}
	q := r.URL.Query()
	if err := onlyParams(q, "node", "last_hour"); err != nil {
		return err
	}
	lastHour, err := flagParam(q, "last_hour")
	if err != nil {
		return err
	}
	names := q["node"]
	if len(names) > maxNodeParams {
		return badRequest("%d node parameters, more than the %d one request may name: ask for the whole board without node", len(names), maxNodeParams)
	}
	s := h.o.Board.Current(r.Context())
	nodes := s.Board.Nodes
	if len(names) > 0 {
		nodes = nil
		seen := map[string]bool{}
		for _, name := range names {
			if name == "" {
				return badRequest("empty node parameter: name a node, as node=gpu001")
			}
			n, err := s.Board.Find(name)
			if err != nil {
				return &httpError{code: http.StatusNotFound, msg: err.Error()}
			}
			if !seen[name] {
				seen[name] = true
				nodes = append(nodes, *n)
			}
		}
	}
	status := h.view(s).Status
	if lastHour {
		status = h.view(s).StatusLastHour
	}
	encode := func() ([]byte, error) {
		doc := status(nodes)
		h.v.maskStatus(&doc)
		b, err := json.Marshal(doc)
		if err != nil {
			return nil, fmt.Errorf("encode the status document: %w", err)
		}
		// Indented, the status document is 2.05 times its compact size:
		// room for it at once, not a copy of megabytes on the way.
		return indentJSON(make([]byte, 0, len(b)*5/2), b), nil
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if len(names) > 0 || h.v.private {
		// Masked or chosen nodes are encoded for their asker (and
		// gzipped by ServeHTTP, fast).
		out, err := encode()
		if err != nil {
			return err
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
		return nil
	}
	// The whole board, the same for every viewer: encoded and gzipped
	// once a build.
	d, err := board.Encoded(s, fmt.Sprintf("status %p %t", h.mapping, lastHour), func() (*servedDoc, error) {
		b, err := encode()
		if err != nil {
			return nil, err
		}
		return newServedDoc(b)
	})
	if err != nil {
		return err
	}
	d.serve(w, r)
	return nil
}

// servedDoc is a document as served to every asker of one board build:
// its bytes, the same gzipped once (docGzipLevel), and their ETag.
type servedDoc struct {
	raw, gz []byte
	etag    string
}

// docGzipLevel is klauspost/compress's level for the served documents,
// which the first asker of a build waits for. The status document of
// 10,000 GPUs (5.8 MB) takes 12-15 ms at it against compress/gzip's
// default level's 34-37 ms; its size is between that level's and the
// fastest's (28 % larger than the default with varied readings, 4 %
// smaller when every GPU reads alike; the fastest is 80 % larger), a
// trade for the head server's CPU every build.
const docGzipLevel = 6

func newServedDoc(raw []byte) (*servedDoc, error) {
	z := bytes.NewBuffer(make([]byte, 0, len(raw)/32))
	zw, err := gzip.NewWriterLevel(z, docGzipLevel)
	if err != nil {
		return nil, fmt.Errorf("gzip the document: %w", err)
	}
	_, _ = zw.Write(raw) // to a bytes.Buffer: cannot fail
	if err := zw.Close(); err != nil {
		return nil, fmt.Errorf("gzip the document: %w", err)
	}
	// Weak: the plain and the gzipped bytes are one document. A checksum
	// and the length, not a hash: the document is megabytes.
	etag := fmt.Sprintf(`W/"%08x-%x"`, crc32.ChecksumIEEE(raw), len(raw))
	return &servedDoc{raw: raw, gz: z.Bytes(), etag: etag}, nil
}

// serve answers r with d: 304 when r holds its ETag already, gzipped
// when r takes gzip (ServeHTTP's writer then passes the bytes on as they
// are), else plain. The headers but these are the caller's.
func (d *servedDoc) serve(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("ETag", d.etag)
	if etagListed(r.Header.Get("If-None-Match"), d.etag) {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	body := d.raw
	if zw, ok := precompressed(w); ok {
		w, body = zw, d.gz
	}
	hd.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write(body)
	}
}

// etagListed is whether the If-None-Match value list names etag, weakly
// compared (RFC 9110, 13.1.2), or is "*".
func etagListed(list, etag string) bool {
	if strings.TrimSpace(list) == "*" {
		return true
	}
	for _, t := range strings.Split(list, ",") {
		if strings.TrimPrefix(strings.TrimSpace(t), "W/") == strings.TrimPrefix(etag, "W/") {
			return true
		}
	}
	return false
}

// indentJSON appends src, compact JSON as json.Marshal writes it, to dst
// indented as writeJSON's encoder indents (two spaces, empty arrays and
// objects kept as [] and {}, a newline at the end): byte for byte, in one
// pass. The status document of a large board is megabytes, and
// encoding/json's own indenting scans it again a byte at a time through
// its validator, several times as long as this. Strings and scalars are
// copied a run at a time, and each newline with its indent at once.
func indentJSON(dst, src []byte) []byte {
	depth := 0
	var indents []byte // "\n" and the spaces of the deepest level yet
	newline := func() {
		if n := 1 + 2*depth; n > len(indents) {
			indents = append(indents[:0], '\n')
			for range 2 * (depth + 8) {
				indents = append(indents, ' ')
			}
		}
		dst = append(dst, indents[:1+2*depth]...)
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '"':
			// A string, to its closing quote: json.Marshal escapes every
			// quote and control character inside it.
			j := i + 1
			for ; j < len(src) && src[j] != '"'; j++ {
				if src[j] == '\\' {
					j++
				}
			}
			dst = append(dst, src[i:j+1]...)
			i = j
		case '{', '[':
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				dst = append(dst, c, src[i+1])
				i++
				continue
			}
			dst = append(dst, c)
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			// A number, true, false or null, to the next bracket, comma
			// or colon: compact JSON has no space outside strings.
			j := i + 1
			for ; j < len(src); j++ {
				if d := src[j]; d == ',' || d == '}' || d == ']' || d == ':' {
					break
				}
			}
			dst = append(dst, src[i:j]...)
			i = j - 1
		}
	}
	return append(dst, '\n')
}

// GET /api/v1/free: gpusuite.free/v1, as gpuacct free --format json.
func (h *Handler) apiFree(w http.ResponseWriter, r *http.Request) error {
	if h.o.Board == nil {
		return errBoardOff()
	}
	if err := onlyParams(r.URL.Query()); err != nil {
		return err
	}
	s := h.o.Board.Current(r.Context())
	writeJSON(w, http.StatusOK, s.View().Free())
	return nil
}

// GET /api/v1/notes[?all=1][&clusters=...]: gpusuite.notes/v1 from the
// ledger, of the clusters chosen as the other ledger reads choose them.
func (h *Handler) apiNotes(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	if err := onlyParams(q, "all", "clusters", "cluster"); err != nil {
		return err
	}
	all, err := flagParam(q, "all")
	if err != nil {
		return err
	}
	now := h.o.Now()
	var doc board.NotesDoc
	sq := &query{vals: q}
	err = h.withScope(h.src, r, sq, func(c *conn) error {
		ns, err := c.rep.Notes(r.Context(), now, all)
		if err != nil {
			return fmt.Errorf("notes: %w", err)
		}
		list := make([]board.ListedNote, 0, len(ns))
		for _, n := range ns {
			if sq.inScope(n.Cluster) {
				list = append(list, notes.Listed(n))
			}
		}
		doc = board.NewNotesDoc(now, all, list)
		h.v.maskNotes(doc.Notes)
		return nil
	})
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, doc)
	return nil
}
