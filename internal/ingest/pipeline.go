package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"sync"
	"time"
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
// files are in flight, so memory stays bounded by ahead ×
// ingest.max_file_size however many files wait.
type prefetcher struct {
	order     chan *pending
	quit      chan struct{}
	wg        sync.WaitGroup
	remaining int
	stopOnce  sync.Once
}

type pending struct {
	l    loaded
	done chan struct{}
}

// prefetch starts reading files in the background.
func (in *Ingester) prefetch(files []file, v Validator) *prefetcher {
	workers := min(max(runtime.GOMAXPROCS(0), 1), 8)
	ahead := 4 * workers
	p := &prefetcher{order: make(chan *pending, ahead), quit: make(chan struct{}), remaining: len(files)}
	work := make(chan *pending)
	p.wg.Add(1 + workers)
	go func() {
		defer p.wg.Done()
		defer close(work)
		for _, f := range files {
			w := &pending{l: loaded{f: f}, done: make(chan struct{})}
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

// load reads, hashes and parses one file.
func (in *Ingester) load(l *loaded, v Validator) {
	data, err := in.read(l.f)
	if err != nil {
		l.readErr = err
		return
	}
	sum := sha256.Sum256(data)
	l.hash = hex.EncodeToString(sum[:])
	l.size = len(data)
	l.p, l.parseErr = v.Parse(l.f.node, l.f.name, data)
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
	w := <-p.order
	<-w.done
	p.remaining--
	reached("next")
	return w.l
}

// stop ends the background work and waits for it; files not handed out
// are left where they are.
func (p *prefetcher) stop() {
	p.stopOnce.Do(func() {
		close(p.quit)
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
