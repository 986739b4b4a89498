package web

import (
	"context"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
)

// TestJobFlight: requests for one job while its detail is being read
// share that read; another job reads on its own; a caller whose first
// reader gave up reads for itself; nothing is kept after a read.
func TestJobFlight(t *testing.T) {
	f := newJobFlight()
	var reads atomic.Int32
	release := make(chan struct{})
	started := make(chan struct{}, 10)
	slow := func() (*report.Detail, error) {
		reads.Add(1)
		started <- struct{}{}
		<-release
		return &report.Detail{Notes: []string{"x"}}, nil
	}
	const callers = 8
	got := make(chan *report.Detail, callers)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		d, _ := f.do(context.Background(), "c1\x001", slow)
		got <- d
	}()
	<-started
	for i := 1; i < callers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d, _ := f.do(context.Background(), "c1\x001", slow)
			got <- d
		}()
	}
	other, err := f.do(context.Background(), "c1\x002", func() (*report.Detail, error) { return &report.Detail{}, nil })
	if err != nil || other == nil {
		t.Fatalf("another job: %v %v", other, err)
	}
	waitFollowers(t, f, "c1\x001", callers-1)
	close(release)
	wg.Wait()
	close(got)
	var first *report.Detail
	for d := range got {
		if first == nil {
			first = d
		}
		if d != first || d == nil {
			t.Fatalf("callers got different answers: %p %p", d, first)
		}
	}
	if n := reads.Load(); n != 1 {
		t.Errorf("%d reads of one job for %d concurrent callers, want 1", n, callers)
	}
	if len(f.calls) != 0 {
		t.Errorf("%d reads kept after they ended", len(f.calls))
	}

	// The first reader's client leaves: a waiting caller reads itself.
	ctx, cancel := context.WithCancel(context.Background())
	lead := make(chan error, 1)
	go func() {
		_, err := f.do(ctx, "c1\x003", func() (*report.Detail, error) {
			started <- struct{}{}
			<-ctx.Done()
			return nil, ctx.Err()
		})
		lead <- err
	}()
	<-started
	follow := make(chan *report.Detail, 1)
	go func() {
		d, err := f.do(context.Background(), "c1\x003", func() (*report.Detail, error) { return &report.Detail{}, nil })
		if err != nil {
			t.Errorf("follower after its reader left: %v", err)
		}
		follow <- d
	}()
	waitFollowers(t, f, "c1\x003", 1)
	cancel()
	if err := <-lead; err == nil {
		t.Errorf("first reader: no error after its client left")
	}
	if d := <-follow; d == nil {
		t.Errorf("follower after its reader left: no detail")
	}
}

// waitFollowers polls, with a deadline, until n callers wait on the
// running read of key.
func waitFollowers(t *testing.T, f *jobFlight, key string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		f.mu.Lock()
		c, ok := f.calls[key]
		w := 0
		if ok {
			w = c.waiters
		}
		f.mu.Unlock()
		if !ok {
			t.Fatalf("read of %q ended early", key)
		}
		if w >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d callers wait on %q after 30 s, want %d", w, key, n)
		}
		runtime.Gosched()
	}
}
