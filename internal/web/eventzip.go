package web

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"sync"
)

// The board's event stream is gzip-compressed for a client that takes it
// (the first event of ten thousand GPUs is megabytes of HTML): one gzip
// member for the stream, whose deflate blocks are compressed event by
// event with no history, each ended by a sync flush. An event is then
// compressed alone, and the whole board's, which every new stream of a
// snapshot starts with, is compressed once for all of them; a stream
// holds no compressor, only its checksum and length.

// sseEvent is one event to send, raw, with its deflated blocks made at
// most once.
type sseEvent struct {
	raw  []byte
	once sync.Once
	z    []byte
}

func (ev *sseEvent) deflated(pool *sync.Pool) []byte {
	ev.once.Do(func() { ev.z = deflateAlone(pool, ev.raw) })
	return ev.z
}

// storedUnder is the size under which an event is sent as a stored
// block: compressing the server's time saves nothing, and resetting a
// compressor for it costs more than the event.
const storedUnder = 512

// newDeflaters is a pool of compressors for deflateAlone.
func newDeflaters() *sync.Pool {
	return &sync.Pool{New: func() any {
		w, _ := flate.NewWriter(nil, flate.DefaultCompression) // a valid level: cannot fail
		return w
	}}
}

// deflateAlone is b as deflate blocks that refer to nothing before them
// and end byte-aligned, not final (a sync flush, or a stored block):
// blocks of several such calls, one after the other, are one deflate
// stream.
func deflateAlone(pool *sync.Pool, b []byte) []byte {
	if len(b) < storedUnder {
		// A stored block: its 3 header bits (not final, type 00) padded
		// to a byte, then its length and the length's complement.
		n := uint16(len(b))
		out := []byte{0, byte(n), byte(n >> 8), byte(^n), byte(^n >> 8)}
		return append(out, b...)
	}
	var out bytes.Buffer
	w := pool.Get().(*flate.Writer)
	defer pool.Put(w)
	w.Reset(&out)     // no history: the blocks stand alone
	_, _ = w.Write(b) // to a bytes.Buffer: cannot fail
	_ = w.Flush()
	return out.Bytes()
}

// gzipStream is one stream's gzip member: its header once, then each
// event's blocks; end closes it with an empty final block and the
// checksum and length of all that was sent.
type gzipStream struct {
	pool    *sync.Pool
	started bool
	crc     uint32
	size    uint32
}

// gzipHeader is a member's header: deflate, no name, no time, any OS.
const gzipHeader = "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"

func (z *gzipStream) next(ev *sseEvent) []byte {
	z.crc = crc32.Update(z.crc, crc32.IEEETable, ev.raw)
	z.size += uint32(len(ev.raw)) // modulo 2^32, as gzip's ISIZE
	if z.started {
		return ev.deflated(z.pool)
	}
	z.started = true
	return append([]byte(gzipHeader), ev.deflated(z.pool)...)
}

func (z *gzipStream) end() []byte {
	var out []byte
	if !z.started {
		out = append(out, gzipHeader...)
	}
	// A final fixed-Huffman block holding only its end code.
	out = append(out, 0x03, 0x00)
	out = binary.LittleEndian.AppendUint32(out, z.crc)
	return binary.LittleEndian.AppendUint32(out, z.size)
}
