package web_test

import (
	"fmt"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/web"
)

// liveDeadline is how long the board and health may take to answer
// while accounting requests fill their slots (issue 29, item 8).
const liveDeadline = time.Second

// TestLiveUnderAccountingLoad: 20 clients loop the page of a long job
// (8 GPUs × 2 days at 10 s: 138,240 samples) on a real server on
// loopback; throughout, the live board, its API and health each answer
// 200 within liveDeadline. They once shared the accounting requests' 4
// slots and waited behind them, then got 503.
func TestLiveUnderAccountingLoad(t *testing.T) {
	j := reportfixture.LongJob{ID: 88, GPUs: 8, Seconds: 2 * 86400, Interval: 10}
	now := time.Unix(reportfixture.T0+j.Seconds+3600, 0)
	db := reportfixture.BuildLongJob(t, j, now)
	lb := newLiveBoard(t, nil)
	srv := newBoardServer(t, web.Options{DB: db, Board: lb.src, Now: func() time.Time { return now },
		Check: report.CheckOptions{Stale: 15 * time.Minute, Lag: 10 * time.Minute, Forget: 7 * 24 * time.Hour}})
	jobPage := srv.URL + fmt.Sprintf("/job/c1/%d", j.ID)
	if code, b := get(t, jobPage); code != http.StatusOK {
		t.Fatalf("job page alone: %d %.300s", code, b)
	}

	const clients = 20
	stop := make(chan struct{})
	answered := make(chan int, 1) // the first job page's status: the load is on
	var mu sync.Mutex
	pages := map[int]int{}
	var wg sync.WaitGroup
	load := &http.Client{Timeout: 120 * time.Second, Transport: &http.Transport{MaxConnsPerHost: clients, MaxIdleConnsPerHost: clients}}
	defer load.CloseIdleConnections()
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Bounded: at most 50 pages a client, or until the probe is done.
			for k := 0; k < 50; k++ {
				select {
				case <-stop:
					return
				default:
				}
				code := -1
				if resp, err := load.Get(jobPage); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					code = resp.StatusCode
				}
				mu.Lock()
				pages[code]++
				mu.Unlock()
				select {
				case answered <- code:
				default:
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		t.Logf("job pages during the probe: statuses %v", pages)
		if pages[http.StatusOK] == 0 {
			t.Errorf("no job page was answered under load: %v", pages)
		}
		if pages[-1] > 0 {
			t.Errorf("%d job page requests failed outright", pages[-1])
		}
	}()
	select {
	case <-answered:
	case <-time.After(2 * time.Minute):
		t.Fatal("no job page answered within 2 minutes")
	}

	probe := &http.Client{Timeout: 30 * time.Second}
	defer probe.CloseIdleConnections()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var slowest time.Duration
	for round := 0; round < 15; round++ {
		for _, p := range []string{"/api/v1/board", "/api/v1/health", "/"} {
			start := time.Now()
			resp, err := probe.Get(srv.URL + p)
			took := time.Since(start)
			if err != nil {
				t.Fatalf("round %d: GET %s: %v", round, p, err)
			}
			b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
			slowest = max(slowest, took)
			if resp.StatusCode != http.StatusOK || took > liveDeadline {
				t.Errorf("round %d: GET %s under accounting load: %d after %s, want 200 within %s: %.200s", round, p, resp.StatusCode, took.Round(time.Millisecond), liveDeadline, b)
			}
		}
		<-tick.C
	}
	t.Logf("slowest live answer under load: %s", slowest.Round(time.Millisecond))
}
