package ingest

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// loaded is one file read, hashed, decoded and validated, ready for the
// writer.
type loaded struct {
	f    file
	hash string
	size int
	p    *Parsed
	// readErr: the file could not be read or is refused (not parsed);
	// parseErr: it is not a valid record file (a *Bad quarantines it).
	readErr, parseErr error
}

// prefetcher reads and decodes files ahead of the single writer, on a few
// goroutines, and hands them over in the order listed. At most ahead
// files, and files of at most inFlight bytes together (the one the writer
// holds included), are in flight; a decoded file takes at most 1.5 times
// its size (TestLoadMemory), so memory stays bounded by 1.5 × inFlight
// however many files wait.
type prefetcher struct {
	order     chan *pending
	quit      chan struct{}
	wg        sync.WaitGroup
	remaining int
	stopOnce  sync.Once
	bytes     *budget
	held      int64 // the budget of the file the writer holds
}

type pending struct {
	l    loaded
	cost int64
	done chan struct{}
}

// inFlight is the budget of file bytes read ahead or being written:
// room for one largest file being written and one being read.
func inFlight(maxFileSize int64) int64 { return 2 * maxFileSize }

// minCost is what a file costs the budget at least: its decoded
// structures are not free however small it is.
const minCost = 4 << 10

// prefetch starts reading files in the background.
func (in *Ingester) prefetch(files []file, v Validator) *prefetcher {
	workers := min(max(runtime.GOMAXPROCS(0), 1), 8)
	ahead := 4 * workers
	limit := inFlight(in.d.Config.Ingest.MaxFileSize)
	p := &prefetcher{order: make(chan *pending, ahead), quit: make(chan struct{}), remaining: len(files), bytes: newBudget(limit)}
	work := make(chan *pending)
	p.wg.Add(1 + workers)
	go func() {
		defer p.wg.Done()
		defer close(work)
		for _, f := range files {
			// Taken in list order, released in the same order by the
			// writer: the next file it waits for always gets its share.
			cost := int64(minCost)
			if st, err := os.Lstat(f.path); err == nil {
				cost = min(max(st.Size(), minCost), limit)
			}
			if !p.bytes.acquire(cost) {
				return
			}
			w := &pending{l: loaded{f: f}, cost: cost, done: make(chan struct{})}
			select {
			case p.order <- w:
			case <-p.quit:
				return
			}
			select {
			case work <- w:
			case <-p.quit:
				return
			}
		}
	}()
	for range workers {
		go func() {
			defer p.wg.Done()
			for w := range work {
				in.load(&w.l, v)
				close(w.done)
			}
		}()
	}
	return p
}

// readBuffer is the read buffer for a file: 64 KiB, or less for a
// smaller file. Most files are events of a kilobyte, and a buffer each
// of the full size was most of what a pass allocated.
func readBuffer(size int64) int {
	const most, least = 64 << 10, 4 << 10
	return int(min(max(size+1, least), most))
}

// load reads, hashes and parses one file. A segment is decoded as it is
// read, so that the file's bytes are never held next to its samples.
func (in *Ingester) load(l *loaded, v Validator) {
	fd, size, err := in.open(l.f)
	if err != nil {
		l.readErr = err
		return
	}
	defer fd.Close()
	limit := in.d.Config.Ingest.MaxFileSize
	h := sha256.New()
	src := &fileReader{r: io.LimitReader(fd, limit+1)}
	br := bufio.NewReaderSize(io.TeeReader(src, h), readBuffer(size))
	if isSegment(br) {
		// Count the lines first (a cheap read), so that the samples
		// take one slice of the right size rather than a growing one.
		lines, size, err := countLines(fd, limit+1)
		if err != nil {
			l.readErr = err
			return
		}
		l.p, l.parseErr = v.segmentFrom(l.f.node, l.f.name, br, sampleCap(lines, size))
		_, _ = io.Copy(io.Discard, br) // the hash covers the whole file
	} else {
		data, _ := io.ReadAll(br)
		l.p, l.parseErr = v.Parse(l.f.node, l.f.name, data)
	}
	switch {
	case src.err != nil:
		// Not the content's fault: the file stays for the next pass.
		l.p, l.parseErr, l.readErr = nil, nil, src.err
		return
	case src.n > limit:
		l.p, l.parseErr, l.readErr = nil, nil, &Bad{fmt.Sprintf("file grew over the limit of %d bytes while read", limit)}
		return
	}
	l.hash = hex.EncodeToString(h.Sum(nil))
	l.size = int(src.n)
}

// isSegment says whether the first line of what br holds names the
// segment schema (what Parse would take as a segment).
func isSegment(br *bufio.Reader) bool {
	head, _ := br.Peek(br.Size())
	if i := bytes.IndexByte(head, '\n'); i >= 0 {
		head = head[:i]
	} else {
		return false
	}
	var h struct {
		Schema string `json:"schema"`
	}
	return json.Unmarshal(head, &h) == nil && h.Schema == record.SegmentSchema
}

// countLines counts the newlines and bytes in the first limit bytes of
// fd, read with pread so that fd's offset stays.
func countLines(fd *os.File, limit int64) (lines int, size int64, err error) {
	buf := make([]byte, 64<<10)
	for size < limit {
		k, err := fd.ReadAt(buf[:min(int64(len(buf)), limit-size)], size)
		lines += bytes.Count(buf[:k], []byte{'\n'})
		size += int64(k)
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, 0, err
		}
	}
	return lines, size, nil
}

// fileReader counts what it read and keeps the first read error other
// than EOF: a decoder sees only that the data ended.
type fileReader struct {
	r   io.Reader
	n   int64
	err error
}

func (f *fileReader) Read(b []byte) (int, error) {
	n, err := f.r.Read(b)
	f.n += int64(n)
	if err != nil && err != io.EOF && f.err == nil {
		f.err = err
	}
	return n, err
}

// budget is a count of bytes that goroutines take and give back.
type budget struct {
	mu     sync.Mutex
	cond   sync.Cond
	free   int64
	closed bool
	// waiting counts the goroutines waiting for bytes (for tests).
	waiting int
}

func newBudget(n int64) *budget {
	b := &budget{free: n}
	b.cond.L = &b.mu
	return b
}

// acquire waits until n bytes are free and takes them; false once closed.
func (b *budget) acquire(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	for b.free < n && !b.closed {
		b.waiting++
		b.cond.Wait()
		b.waiting--
	}
	if b.closed {
		return false
	}
	b.free -= n
	return true
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.free += n
	b.mu.Unlock()
	b.cond.Broadcast()
}

func (b *budget) close() {
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
	b.cond.Broadcast()
}

// testPoint, set only by tests, is called at named points of a pass; the
// kill test makes the process SIGKILL itself there (kill_test.go).
var testPoint func(point string)

// reached marks a point of a pass: "next" (the writer takes a file, in
// its transaction), "commit" (a batch committed, none of its files
// retired yet), "retired" (one file archived or deleted) and
// "housekeeping" (inside its transaction).
func reached(point string) {
	if testPoint != nil {
		testPoint(point)
	}
}

// done reports whether every file has been handed out.
func (p *prefetcher) done() bool { return p.remaining == 0 }

// next waits for the next file in order; only while !done().
func (p *prefetcher) next() loaded {
	// The writer is done with the file it took before: its bytes may go
	// to the files that it now waits for.
	p.bytes.release(p.held)
	w := <-p.order
	<-w.done
	p.held = w.cost
	p.remaining--
	reached("next")
	return w.l
}

// stop ends the background work and waits for it; files not handed out
// are left where they are.
func (p *prefetcher) stop() {
	p.stopOnce.Do(func() {
		close(p.quit)
		p.bytes.close()
		p.wg.Wait()
	})
}

// retirer archives or deletes committed files behind the writer, in
// order, on its own goroutine.
type retirer struct {
	in   *Ingester
	ch   chan retireJob
	wg   sync.WaitGroup
	once sync.Once
}

type retireJob struct {
	files []done
	now   time.Time
}

func (in *Ingester) retirer() *retirer {
	r := &retirer{in: in, ch: make(chan retireJob, 4)}
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for j := range r.ch {
			for _, d := range j.files {
				if err := in.retire(d.f, j.now); err != nil {
					// Committed already: the next pass sees it as a duplicate.
					in.d.Log.Warn("cannot archive or delete ingested file", "file", d.f.path, "err", err)
				}
				reached("retired")
			}
		}
	}()
	return r
}

// retire queues the files of a committed batch.
func (r *retirer) retire(files []done, now time.Time) {
	reached("commit")
	if len(files) > 0 {
		r.ch <- retireJob{files, now}
	}
}

// wait lets the queued files go and returns when they have.
func (r *retirer) wait() {
	r.once.Do(func() {
		close(r.ch)
		r.wg.Wait()
	})
}
