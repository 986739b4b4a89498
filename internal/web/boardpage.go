package web

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strconv"

	"github.com/aicloud/gpusuite/internal/board"
)

// The board fragment is rendered once a build and shared by the page and
// the event stream's first event: at 10,000 GPUs it is most of a page's
// time, and gzipping it most of the rest. So the part after its clock is
// deflated once a build too, and each page is one gzip member of its own
// shell around those blocks (eventzip.go): a page costs its shell.

// renderedFrag is the board fragment of one build as fragOf renders it,
// its clock (data-now) 0.
type renderedFrag struct {
	html []byte
	// at is where html's clock is; tail is html after it, deflated at
	// most once.
	at   int
	tail sseEvent
}

// zeroNow is the fragment's clock as rendered.
const zeroNow = `data-now="0"`

func newRenderedFrag(html []byte) *renderedFrag {
	f := &renderedFrag{html: html, at: bytes.Index(html, []byte(zeroNow))}
	if f.at >= 0 {
		f.tail.raw = html[f.at+len(zeroNow):]
	}
	return f
}

// head is the fragment up to its tail, with the clock nowMS.
func (f *renderedFrag) head(nowMS int64) []byte {
	if f.at < 0 {
		return f.html // no clock: the tail is empty
	}
	out := append(make([]byte, 0, f.at+32), f.html[:f.at]...)
	out = append(out, `data-now="`...)
	out = strconv.AppendInt(out, nowMS, 10)
	return append(out, '"')
}

// fragOf is s's fragment as h's viewer sees it: once a build for all who
// see it in h's language with h's names (everyone's, or none).
func (h *Handler) fragOf(s *board.Snapshot) (*renderedFrag, error) {
	render := func() (*renderedFrag, error) {
		var b bytes.Buffer
		if err := h.pages["board"].ExecuteTemplate(&b, "boardfrag", h.frag(s)); err != nil {
			return nil, fmt.Errorf("render board: %w", err)
		}
		return newRenderedFrag(b.Bytes()), nil
	}
	if h.v.private && h.v.name != "" {
		return render() // names as one viewer may see them
	}
	return board.Encoded(s, fmt.Sprintf("frag %s %p %t", h.tr.Lang(), h.mapping, h.v.private), render)
}

// renderFrag is the fragment alone, for the event stream.
func (h *Handler) renderFrag(s *board.Snapshot) ([]byte, error) {
	f, err := h.fragOf(s)
	if err != nil {
		return nil, err
	}
	return f.html, nil
}

// boardMark stands for the fragment in the rendered page: html/template
// writes a NUL anywhere else as U+FFFD.
const boardMark = "\x00board\x00"

// writeBoardPage answers with the page v around f, its clock nowMS:
// gzipped when the client takes it (ServeHTTP's writer then passes the
// member on as it is), f's tail as deflated once for all.
func (h *Handler) writeBoardPage(w http.ResponseWriter, v *boardPage, f *renderedFrag, nowMS int64) error {
	v.Board = boardMark
	var b bytes.Buffer
	if err := h.pages["board"].ExecuteTemplate(&b, "layout", v); err != nil {
		return fmt.Errorf("render page board: %w", err)
	}
	page := b.Bytes()
	i := bytes.Index(page, []byte(boardMark))
	if i < 0 {
		return errors.New("render page board: the page has no place for the board")
	}
	parts := []*sseEvent{{raw: append(page[:i:i], f.head(nowMS)...)}, &f.tail, {raw: page[i+len(boardMark):]}}
	hd := w.Header()
	hd.Set("Content-Type", "text/html; charset=utf-8")
	hd.Add("Vary", "Accept-Language") // the page speaks the browser's language
	var out [][]byte
	if zw, ok := precompressed(w); ok {
		w = zw
		z := gzipStream{pool: h.hub.deflaters}
		for _, p := range parts {
			out = append(out, z.next(p))
		}
		out = append(out, z.end())
	} else {
		for _, p := range parts {
			out = append(out, p.raw)
		}
	}
	n := 0
	for _, o := range out {
		n += len(o)
	}
	hd.Set("Content-Length", strconv.Itoa(n))
	w.WriteHeader(http.StatusOK)
	for _, o := range out {
		if _, err := w.Write(o); err != nil {
			return nil // the client left: nothing to answer
		}
	}
	return nil
}
