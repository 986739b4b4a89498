package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/web"
)

// BenchmarkBoardAPI1000 is GET /api/v1/board of a 1,000-GPU cluster (125
// nodes × 8, half the GPUs busy with a process each) through the handler:
// "shared" serves the board the source built for all askers of that
// second, "rebuilt" reads the 125 snapshots and builds the board for each
// request (a clock a second further each time); "page" is the board page
// (GET /, HTML) rebuilt each time. docs/performance.md, "web".
func BenchmarkBoardAPI1000(b *testing.B) {
	dir, st := cluster1000(b)
	for _, tc := range []struct {
		name, path string
		step       time.Duration
	}{{"shared", "/api/v1/board", 0}, {"rebuilt", "/api/v1/board", time.Second}, {"page", "/", time.Second}} {
		b.Run(tc.name, func(b *testing.B) {
			var mu sync.Mutex
			now := boardNow
			clock := func() time.Time {
				mu.Lock()
				defer mu.Unlock()
				now = now.Add(tc.step)
				return now
			}
			src := board.NewSource(board.SourceOptions{LiveDir: dir, Now: clock, MaxAge: time.Second,
				Slurm: func(context.Context) (slurmstate.State, error) { return st, nil }})
			src.RefreshSlurm(context.Background())
			h, err := web.New(web.Options{DB: filepath.Join(b.TempDir(), "none.db"), Location: time.UTC, Board: src})
			if err != nil {
				b.Fatal(err)
			}
			defer h.Close()
			req := httptest.NewRequest(http.MethodGet, tc.path, nil)
			var size int
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%d %s", rec.Code, rec.Body)
				}
				size = rec.Body.Len()
			}
			b.ReportMetric(float64(size), "bytes/doc")
		})
	}
}

// cluster1000 writes the snapshots of 125 nodes × 8 GPUs, the even GPUs
// busy, and returns their directory with Slurm's view of them.
func cluster1000(tb testing.TB) (string, slurmstate.State) {
	dir := tb.TempDir()
	var st slurmstate.State
	for n := range 125 {
		name := fmt.Sprintf("gpu%03d", n)
		l := record.Live{Node: name}
		for i := range 8 {
			if i%2 == 0 {
				l.GPUs = append(l.GPUs, liveGPU(i, 80, 40960, uint64(1000+n*4+i/2)))
			} else {
				l.GPUs = append(l.GPUs, liveGPU(i, 0, 0))
			}
		}
		writeSnapshot(tb, dir, l)
		st.Nodes = append(st.Nodes, slurmNode(name, slurmstate.Mixed, 8, "gpu"))
	}
	st.At = boardNow
	return dir, st
}
