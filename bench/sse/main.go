// Command sse holds N board event streams open against a running gpuacct
// serve for a while, as agents rewrite their live snapshots, and reports
// the errors, the events and bytes received, and serve's RSS and CPU
// seconds at the start, middle and end (docs/performance.md, "web").
// bench/sse.sh starts serve and runs it.
//
//	go run ./bench/sse -url http://127.0.0.1:9466 -pid 1234 -live-dir /tmp/live -clients 200 -duration 60s
package main

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aicloud/gpusuite/bench/internal/footprint"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/record"
)

func main() { os.Exit(run()) }

func run() int {
	url := flag.String("url", "http://127.0.0.1:9466", "serve's dashboard address")
	pid := flag.Int("pid", 0, "serve's process id, for its RSS and CPU")
	live := flag.String("live-dir", "", "board.live_dir of that serve: snapshots are written there")
	clients := flag.Int("clients", 200, "event streams held open")
	nodes := flag.Int("nodes", 125, "nodes of 8 GPUs whose snapshots are written")
	interval := flag.Duration("interval", 10*time.Second, "each node's snapshot period (staggered across the nodes, as agents are)")
	duration := flag.Duration("duration", 60*time.Second, "how long the streams stay open")
	flag.Parse()
	if *pid <= 0 || *live == "" {
		fmt.Fprintln(os.Stderr, "sse: -pid and -live-dir are required (bench/sse.sh sets them)")
		return exitcode.Usage
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	// Agents: every node writes its snapshot once per interval, the nodes
	// spread over it.
	for n := range *nodes {
		if err := writeLive(*live, n, 0); err != nil {
			fmt.Fprintln(os.Stderr, "sse:", err)
			return exitcode.Failure
		}
	}
	go func() {
		step := *interval / time.Duration(*nodes)
		t := time.NewTicker(step)
		defer t.Stop()
		for i := 1; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := writeLive(*live, i%*nodes, i); err != nil {
				fmt.Fprintln(os.Stderr, "sse: write snapshot:", err)
			}
		}
	}()

	var events, bytes, wire, firstWire, firstRaw, errs, open atomic.Int64
	var firstErr sync.Once
	var wg sync.WaitGroup
	cctx, ccancel := context.WithTimeout(ctx, *duration)
	defer ccancel()
	for i := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := stream(cctx, clientOf(i), *url+"/api/v1/board/events", counts{events: &events, bytes: &bytes, wire: &wire,
				firstWire: &firstWire, firstRaw: &firstRaw, open: &open})
			if err != nil && cctx.Err() == nil {
				errs.Add(1)
				firstErr.Do(func() { fmt.Fprintln(os.Stderr, "sse: first error:", err) })
			}
		}()
	}
	// The streams' first events: start is when all are open.
	deadline := time.Now().Add(30 * time.Second)
	for open.Load() < int64(*clients) && time.Now().Before(deadline) && cctx.Err() == nil {
		time.Sleep(50 * time.Millisecond) // a bench's poll, not a test's synchronisation
	}
	fmt.Printf("# %d streams open of %d, %d nodes × 8 GPUs, snapshots every %s, %s\n", open.Load(), *clients, *nodes, *interval, *duration)
	start := sample(*pid)
	fmt.Printf("start   rss %6.1f MiB  cpu %6.2f s\n", start.rssMiB, start.cpuS)
	select {
	case <-cctx.Done():
	case <-time.After(*duration / 2):
	}
	mid := sample(*pid)
	fmt.Printf("middle  rss %6.1f MiB  cpu %6.2f s\n", mid.rssMiB, mid.cpuS)
	<-cctx.Done()
	end := sample(*pid)
	wg.Wait()
	fmt.Printf("end     rss %6.1f MiB  cpu %6.2f s\n", end.rssMiB, end.cpuS)
	fmt.Printf("serve CPU over the run: %.2f s in %s (%.1f %% of one core); %d events, %.1f MiB received (%.1f MiB on the wire); %d errors\n",
		end.cpuS-start.cpuS, duration.String(), 100*(end.cpuS-start.cpuS)/duration.Seconds(), events.Load(), float64(bytes.Load())/(1<<20),
		float64(wire.Load())/(1<<20), errs.Load())
	fmt.Printf("first event: %.1f KiB, %.1f KiB on the wire (largest of the streams)\n", float64(firstRaw.Load())/1024, float64(firstWire.Load())/1024)
	if errs.Load() > 0 || open.Load() < int64(*clients) {
		return exitcode.Failure
	}
	return exitcode.OK
}

// counts are what the streams received: events, their bytes, the bytes
// on the wire (gzip, as a browser takes them), the largest first event
// of a stream raw and on the wire, and the streams open.
type counts struct {
	events, bytes, wire, firstWire, firstRaw, open *atomic.Int64
}

// wireReader counts the bytes read through it.
type wireReader struct {
	r io.Reader
	n *atomic.Int64
}

func (w wireReader) Read(p []byte) (int, error) {
	n, err := w.r.Read(p)
	w.n.Add(int64(n))
	return n, err
}

// stream reads one event stream until ctx ends, taking gzip as a browser
// does; an error is a stream that could not open or ended early.
func stream(ctx context.Context, c *http.Client, url string, n counts) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("Accept-Encoding", "gzip")
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %s", resp.Status)
	}
	var mine atomic.Int64 // this stream's wire bytes
	var body io.Reader = wireReader{r: resp.Body, n: &mine}
	if resp.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(body)
		if err != nil {
			return fmt.Errorf("stream's gzip: %w", err)
		}
		body = zr
	}
	defer func() { n.wire.Add(mine.Load()) }()
	r := bufio.NewReaderSize(body, 1<<20)
	first, inFirst, raw := true, false, int64(0)
	for {
		line, err := r.ReadSlice('\n')
		n.bytes.Add(int64(len(line)))
		raw += int64(len(line))
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return fmt.Errorf("stream ended: %w", err)
		}
		if inFirst && len(line) == 1 {
			// The first board's end: what it took, raw and on the wire
			// (read ahead by at most a buffer).
			inFirst = false
			maxOf(n.firstRaw, raw)
			maxOf(n.firstWire, mine.Load())
		}
		// The whole board first, then the changed sections.
		if strings.HasPrefix(string(line), "event: board") || strings.HasPrefix(string(line), "event: nodes") {
			n.events.Add(1)
			if first {
				first, inFirst = false, true
				n.open.Add(1)
			}
		}
	}
}

// maxOf raises m to v.
func maxOf(m *atomic.Int64, v int64) {
	for {
		cur := m.Load()
		if v <= cur || m.CompareAndSwap(cur, v) {
			return
		}
	}
}

// clientOf is stream i's HTTP client, from a loopback address of its
// own (127.1.x.y; Linux answers all of 127/8), as viewers on many
// machines: serve allows one client (an IPv4 address or an IPv6 /64) web.max_streams_per_client streams only.
func clientOf(i int) *http.Client {
	local := &net.TCPAddr{IP: net.IPv4(127, 1, byte(i/250), byte(i%250+1))}
	d := &net.Dialer{LocalAddr: local, Timeout: 10 * time.Second}
	// Compression is the stream's own to undo: stream counts its bytes
	// on the wire.
	return &http.Client{Transport: &http.Transport{DialContext: d.DialContext, DisableCompression: true}}
}

type usage struct{ rssMiB, cpuS float64 }

// sample reads a process's resident memory and CPU seconds from /proc.
func sample(pid int) usage {
	var u usage
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
				kb, _ := strconv.ParseFloat(f[1], 64)
				u.rssMiB = kb / 1024
			}
		}
	}
	if cpu, err := footprint.ProcCPU(pid); err == nil {
		u.cpuS = cpu.Seconds()
	}
	return u
}

// writeLive replaces node n's snapshot as its agent does (temporary file,
// rename), its utilizations moving with round.
func writeLive(dir string, n, round int) error {
	name := fmt.Sprintf("gpu%03d", n)
	l := record.Live{Schema: record.LiveSchema, Cluster: "bench", Node: name, Time: time.Now().UTC(), Interval: 10}
	for i := range 8 {
		util, used, total := uint32((round*7+i*13)%100), uint64(0), uint64(81920)
		g := record.LiveGPU{Index: i, UUID: fmt.Sprintf("GPU-%s-%d", name, i), Model: "NVIDIA H100 80GB HBM3", Util: &util, MemUsedMiB: &used, MemTotalMiB: &total}
		if i%2 == 0 {
			job := uint64(1000 + n*4 + i/2)
			used = 40960
			g.Jobs = []record.LiveJob{{Job: job, User: "u" + strconv.Itoa(n), Account: "bench", Start: time.Now().Add(-time.Hour).UTC()}}
			g.Procs = []record.LiveProc{{PID: uint32(10000 + i), User: "u" + strconv.Itoa(n), Job: job, MemUsedMiB: used}}
		} else {
			util = 0
		}
		l.GPUs = append(l.GPUs, g)
	}
	b, err := json.Marshal(l)
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, "."+name+".tmp")
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, record.LiveFileName(name)))
}
