package web_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/report"
)

// heapCap is the documented bound on serve's Go heap with 200 clients
// sending the worst requests at once (docs/api.md, "Limits").
const heapCap = 256 << 20

// maxAnswer bounds one answer's bytes in this test: the largest report
// (10,000 rows) is a few MiB.
const maxAnswer = 16 << 20

// testLoad: 200 clients send the most expensive requests at once to the
// real serve. Every answer is a bounded 200, a one-line 400 or a 503
// with Retry-After, and serve's heap stays under heapCap.
func testLoad(t *testing.T, f *fixture) {
	var longest struct {
		Jobs []struct {
			URL string `json:"url"`
		} `json:"jobs"`
	}
	if code, b := getJSON(t, f.url("/api/v1/jobs?start=1970-01-01&end=2199-01-01&sort=alloc&limit=1"), &longest); code != 200 || len(longest.Jobs) != 1 {
		t.Fatalf("longest job: %d %s", code, b)
	}
	series := longest.Jobs[0].URL + "/series"
	worst := []string{
		"/api/v1/report/users?start=0001-01-01&end=9999-12-31&period=day",
		"/api/v1/report/users?start=now-990days&period=day",
		"/api/v1/report/nodes?start=now-990days&period=day",
		"/api/v1/report/tree?start=now-990weeks&period=week",
		"/api/v1/report/top?start=1970-01-01&end=2199-01-01&limit=10000",
		"/api/v1/report/jobs?start=1970-01-01&end=2199-01-01&limit=10000",
		"/api/v1/jobs?start=1970-01-01&end=2199-01-01&limit=10000",
		"/api/v1/jobs/running?limit=10000",
		series,
		"/api/v1/nodes",
		"/api/v1/health",
		"/accounting?start=1970-01-01&end=2199-01-01",
		"/accounting?start=now-990days&period=day",
		"/user/" + f.truth.JobList[0].User + "?start=now-990days&period=day",
	}
	// Each answers correctly and bounded when asked alone.
	for _, p := range worst {
		code, b := get(t, f.url(p))
		want := http.StatusOK
		if strings.Contains(p, "0001-01-01") {
			want = http.StatusBadRequest
		}
		if code != want || len(b) > maxAnswer {
			t.Fatalf("GET %s alone: %d, %d bytes: %.300s", p, code, len(b), b)
		}
	}
	var sr struct {
		GPUs []struct {
			Points []json.RawMessage `json:"points"`
		} `json:"gpus"`
	}
	if _, b := get(t, f.url(series)); json.Unmarshal(b, &sr) != nil || len(sr.GPUs) == 0 {
		t.Fatalf("series: %.300s", b)
	}
	for _, g := range sr.GPUs {
		if len(g.Points) == 0 || len(g.Points) > report.MaxSeriesPoints {
			t.Errorf("series: %d points a GPU, want 1..%d", len(g.Points), report.MaxSeriesPoints)
		}
	}

	var peak uint64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	const clients = 200
	type result struct {
		path    string
		code    int
		n       int
		retry   string
		errLine string
	}
	results := make(chan result, clients*3)
	var wg sync.WaitGroup
	client := &http.Client{Timeout: 120 * time.Second, Transport: &http.Transport{MaxConnsPerHost: clients, MaxIdleConnsPerHost: clients}}
	for i := 0; i < clients; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			for k := 0; k < 3; k++ {
				p := worst[(i*3+k)%len(worst)]
				resp, err := client.Get(f.url(p))
				if err != nil {
					results <- result{path: p, code: -1, errLine: err.Error()}
					continue
				}
				b, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
				resp.Body.Close()
				r := result{path: p, code: resp.StatusCode, n: len(b), retry: resp.Header.Get("Retry-After")}
				if resp.StatusCode >= 400 && strings.HasPrefix(p, "/api/") {
					var e struct {
						Error string `json:"error"`
					}
					if json.Unmarshal(b, &e) != nil || e.Error == "" || strings.Contains(e.Error, "\n") {
						r.errLine = fmt.Sprintf("not a one-line JSON error: %.200s", b)
					}
				}
				results <- r
			}
		}(i)
	}
	wg.Wait()
	close(stop)
	<-sampled
	close(results)
	counts := map[int]int{}
	for r := range results {
		counts[r.code]++
		switch {
		case r.code == -1:
			t.Errorf("GET %s: %s", r.path, r.errLine)
		case r.errLine != "":
			t.Errorf("GET %s: %d %s", r.path, r.code, r.errLine)
		case r.n > maxAnswer:
			t.Errorf("GET %s: answer over %d bytes", r.path, maxAnswer)
		case r.code == http.StatusServiceUnavailable && r.retry == "":
			t.Errorf("GET %s: 503 without Retry-After", r.path)
		case r.code == http.StatusBadRequest && !strings.Contains(r.path, "0001-01-01"):
			t.Errorf("GET %s: 400", r.path)
		case r.code != http.StatusOK && r.code != http.StatusBadRequest && r.code != http.StatusServiceUnavailable:
			t.Errorf("GET %s: status %d", r.path, r.code)
		}
	}
	t.Logf("%d clients × 3 requests: statuses %v; peak heap %.1f MiB (cap %d MiB)", clients, counts, float64(peak)/(1<<20), heapCap>>20)
	if counts[http.StatusOK] == 0 {
		t.Errorf("no request was answered: %v", counts)
	}
	if peak > heapCap {
		t.Errorf("peak heap %.1f MiB, over the %d MiB cap", float64(peak)/(1<<20), heapCap>>20)
	}
}

// get fetches url and returns the status and body.
func get(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}
