package ingest

import (
	"io"
	"unsafe"

	"github.com/aicloud/gpusuite/internal/record"
)

// sampleCap is how many samples to make room for in a segment of size
// bytes and newlines lines: one a line, but never a slice larger than the
// file, however many short (invalid) lines it has.
func sampleCap(newlines int, size int64) int {
	return min(newlines, int(size/int64(unsafe.Sizeof(record.Sample{})))+1)
}

// tailReader remembers the last byte read: a segment must end in a
// newline.
type tailReader struct {
	r    io.Reader
	last byte
}

func (t *tailReader) Read(b []byte) (int, error) {
	n, err := t.r.Read(b)
	if n > 0 {
		t.last = b[n-1]
	}
	return n, err
}
