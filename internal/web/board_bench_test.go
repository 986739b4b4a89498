package web_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"syscall"
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
func cluster1000(tb testing.TB) (string, slurmstate.State) { return clusterN(tb, 125) }

// clusterN writes the snapshots of nodes × 8 GPUs, the even GPUs busy
// (each with a job of its own, of user u<job>), the first half of the
// nodes in partition gpu and the rest in long; every 97th node is
// drained and every 101st down (in trouble, for the summary). It returns
// their directory with Slurm's view of them.
func clusterN(tb testing.TB, nodes int) (string, slurmstate.State) {
	dir := tb.TempDir()
	var st slurmstate.State
	for n := range nodes {
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
		part, cond := "gpu", slurmstate.Mixed
		if n >= nodes/2 {
			part = "long"
		}
		switch {
		case n%97 == 96:
			cond = slurmstate.Drained
		case n%101 == 100:
			cond = slurmstate.Down
		}
		st.Nodes = append(st.Nodes, slurmNode(name, cond, 8, part))
	}
	st.At = boardNow
	return dir, st
}

// BenchmarkBoardScale is the board of 1,000 and 10,000 GPUs (clusterN)
// served from the board the source built once: the status document
// (GET /api/v1/board) and the page (GET /), gzipped as a browser takes
// them. docs/performance.md, "web".
func BenchmarkBoardScale(b *testing.B) {
	for _, nodes := range []int{125, 1250} {
		dir, st := clusterN(b, nodes)
		src := board.NewSource(board.SourceOptions{LiveDir: dir, Now: func() time.Time { return boardNow }, MaxAge: time.Hour,
			Slurm: func(context.Context) (slurmstate.State, error) { return st, nil }})
		src.RefreshSlurm(context.Background())
		h, err := web.New(web.Options{DB: filepath.Join(b.TempDir(), "none.db"), Location: time.UTC, Board: src})
		if err != nil {
			b.Fatal(err)
		}
		for _, path := range []string{"/api/v1/board", "/"} {
			b.Run(fmt.Sprintf("gpus=%d/%s", nodes*8, map[string]string{"/": "page", "/api/v1/board": "document"}[path]), func(b *testing.B) {
				req := httptest.NewRequest(http.MethodGet, path, nil)
				req.Header.Set("Accept-Encoding", "gzip")
				var size int
				for b.Loop() {
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					if rec.Code != http.StatusOK {
						b.Fatalf("%d %s", rec.Code, rec.Body)
					}
					size = rec.Body.Len()
				}
				b.ReportMetric(float64(size), "gzbytes/doc")
			})
		}
		h.Close()
	}
}

// fillHour gives each GPU of clusterN(nodes) an hour of readings before
// boardNow: a utilization that moves every minute, a job for its first
// half hour and none after, as a strip of a busy cluster reads.
// stripSource is a source of the board of nodes in dir, Slurm saying st,
// and its clock: with strips, at boardNow with an hour of them
// (fillHour); without, a second before, when the snapshots' minute is
// not yet a whole one, so no GPU has a strip.
func stripSource(dir string, st slurmstate.State, nodes int, strips bool) (*board.Source, func() time.Time) {
	at := boardNow.Add(-time.Second)
	if strips {
		at = boardNow
	}
	now := func() time.Time { return at }
	src := board.NewSource(board.SourceOptions{LiveDir: dir, Now: now, MaxAge: time.Hour,
		Slurm: func(context.Context) (slurmstate.State, error) { return st, nil }})
	src.RefreshSlurm(context.Background())
	if strips {
		fillHour(src, nodes)
	}
	return src, now
}

func fillHour(src *board.Source, nodes int) {
	var pts []board.Point
	for n := range nodes {
		for i := range 8 {
			for m := range board.StripMinutes {
				at := boardNow.Add(time.Duration(m-board.StripMinutes) * time.Minute)
				util := uint32((n*7 + i*13 + m*29) % 101)
				p := board.Point{Cluster: "c1", Node: fmt.Sprintf("gpu%03d", n), UUID: fmt.Sprintf("GPU-%04d", i), At: at, Util: &util}
				if m < 30 {
					p.Job, p.User = uint64(5000+n*8+i), fmt.Sprintf("u%d", n)
				}
				pts = append(pts, p)
			}
		}
	}
	src.Fill(pts)
}

// BenchmarkBoardStrip is the board of 1,000 GPUs (clusterN) with and
// without an hour of strips, in the same run: the page (GET /) and the
// status document with the strips (last_hour=1), served gzipped as a
// browser takes them, each reporting its bytes plain and gzipped. The
// board without strips is had a few seconds before boardNow, when the
// snapshots' minute is not yet a whole one. docs/performance.md, "web".
func BenchmarkBoardStrip(b *testing.B) {
	dir, st := clusterN(b, 125)
	for _, strips := range []bool{false, true} {
		src, now := stripSource(dir, st, 125, strips)
		h, err := web.New(web.Options{DB: filepath.Join(b.TempDir(), "none.db"), Location: time.UTC, Board: src, Now: now})
		if err != nil {
			b.Fatal(err)
		}
		get := func(path, enc string) int {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("Accept-Encoding", enc)
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
			return rec.Body.Len()
		}
		for _, path := range []string{"/", "/api/v1/board?last_hour=1"} {
			b.Run(fmt.Sprintf("strips=%t/%s", strips, map[string]string{"/": "page", "/api/v1/board?last_hour=1": "document"}[path]), func(b *testing.B) {
				size, gz := get(path, ""), 0
				for b.Loop() {
					gz = get(path, "gzip")
				}
				b.ReportMetric(float64(size), "bytes/doc")
				b.ReportMetric(float64(gz), "gzbytes/doc")
			})
		}
		h.Close()
	}
}

// BenchmarkBoardFirstAsker is the status document's first request of a
// build: each loop moves the clock a board's age on or back (the same
// snapshots, so the same document) and times GET /api/v1/board gzipped
// as a browser asks. "first" has the board rebuilt before the timer (a
// request for /api/v1/free), so it times the encoding alone; "rebuilt"
// times the build too, as a lone poller of a board older than its max
// age waits for both. cpu-ms/op is the process's CPU time over the
// timed requests, steadier than their wall time on a busy machine.
func BenchmarkBoardFirstAsker(b *testing.B) {
	for _, nodes := range []int{125, 1250} {
		dir, st := clusterN(b, nodes)
		var mu sync.Mutex
		now := boardNow
		clock := func() time.Time {
			mu.Lock()
			defer mu.Unlock()
			return now
		}
		src := board.NewSource(board.SourceOptions{LiveDir: dir, Now: clock, MaxAge: time.Second,
			Slurm: func(context.Context) (slurmstate.State, error) { return st, nil }})
		src.RefreshSlurm(context.Background())
		h, err := web.New(web.Options{DB: filepath.Join(b.TempDir(), "none.db"), Location: time.UTC, Board: src})
		if err != nil {
			b.Fatal(err)
		}
		get := func(path string) int {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("Accept-Encoding", "gzip")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusOK {
				b.Fatalf("%d %s", rec.Code, rec.Body)
			}
			return rec.Body.Len()
		}
		for _, rebuilt := range []bool{false, true} {
			b.Run(fmt.Sprintf("gpus=%d/%s", nodes*8, map[bool]string{false: "first", true: "rebuilt"}[rebuilt]), func(b *testing.B) {
				var size int
				var cpu time.Duration
				for b.Loop() {
					b.StopTimer()
					mu.Lock()
					if now.Equal(boardNow) {
						now = boardNow.Add(time.Second)
					} else {
						now = boardNow
					}
					mu.Unlock()
					if !rebuilt {
						get("/api/v1/free")
					}
					b.StartTimer()
					before := processCPU(b)
					size = get("/api/v1/board")
					cpu += processCPU(b) - before
				}
				b.ReportMetric(float64(size), "gzbytes/doc")
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
			})
		}
		h.Close()
	}
}

// processCPU is the user and system CPU time the process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
