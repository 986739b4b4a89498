// Command nfssync measures nfs-sync watch: closes handled per second and
// the daemon's CPU per 1,000 closes, with a writer at a fixed rate and one
// as fast as it can. It runs the real binary and reads its /metrics.
//
//	go run ./bench/nfssync -bin ./bin/nfs-sync -backend inotify -rate 10000 -seconds 5
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/bench/internal/footprint"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
)

func main() {
	bin := flag.String("bin", "./bin/nfs-sync", "nfs-sync binary")
	backend := flag.String("backend", "inotify", "auto, fanotify or inotify")
	rate := flag.Int("rate", 10000, "closes per second for the paced run")
	seconds := flag.Float64("seconds", 5, "length of each run")
	files := flag.Int("files", 1000, "distinct files written in rotation")
	dir := flag.String("dir", "", "directory to write in (default a new one under /dev/shm)")
	flag.Parse()
	if err := run(*bin, *backend, *dir, *rate, *files, time.Duration(*seconds*float64(time.Second))); err != nil {
		fmt.Fprintf(os.Stderr, "bench/nfssync: %v\n", err)
		os.Exit(exitcode.Failure)
	}
}

func run(bin, backend, dir string, rate, files int, d time.Duration) error {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("/dev/shm", "nfssync-bench"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := filepath.Join(dir, ".bench.toml")
	os.WriteFile(cfg, []byte("[nfssync]\nlog_level = \"warn\"\n"), 0o644)
	data := filepath.Join(dir, "data")
	os.Mkdir(data, 0o755)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--config", cfg, "watch", "--backend", backend,
		"--metrics-listen", addr, "--max-fixes-per-second", "0", data)
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", bin, err)
	}
	defer func() { cancel(); cmd.Wait() }()
	for i := 0; ; i++ {
		if _, err := metric(addr, "nfssync_events_total"); err == nil {
			break
		}
		if i > 100 {
			return fmt.Errorf("no /metrics from %s", bin)
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("nfs-sync watch --backend %s, %d files in rotation, %s per run, GOMAXPROCS of the daemon: all %d CPUs\n",
		backend, files, d, numCPU())
	fmt.Println("| run | closes written | closes/s written | events seen | daemon CPU | CPU per 1,000 closes | cores used | fixes |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	for _, r := range []struct {
		name string
		rate int
	}{{fmt.Sprintf("paced %d/s", rate), rate}, {"as fast as possible", 0}} {
		if err := measure(addr, cmd.Process.Pid, data, r.name, r.rate, files, d); err != nil {
			return err
		}
	}
	return nil
}

func measure(addr string, pid int, data, name string, rate, files int, d time.Duration) error {
	ev0, _ := metric(addr, "nfssync_events_total")
	fx0, _ := metric(addr, "nfssync_fixes_total")
	cpu0, err := footprint.ProcCPU(pid)
	if err != nil {
		return err
	}
	start := time.Now()
	n := 0
	buf := []byte("0123456789abcdef")
	for time.Since(start) < d {
		if rate > 0 {
			// Pace: write the closes due by now, then sleep a little.
			due := int(time.Since(start).Seconds() * float64(rate))
			if n >= due {
				time.Sleep(200 * time.Microsecond)
				continue
			}
		}
		p := filepath.Join(data, "f"+strconv.Itoa(n%files))
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			return err
		}
		n++
	}
	took := time.Since(start)
	// Wait until the daemon has seen every close.
	deadline := time.Now().Add(30 * time.Second)
	var ev float64
	for {
		ev, _ = metric(addr, "nfssync_events_total")
		if ev-ev0 >= float64(n) || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	cpu1, _ := footprint.ProcCPU(pid)
	time.Sleep(2 * time.Second) // the fixes of the last burst
	fx, _ := metric(addr, "nfssync_fixes_total")
	cpu := cpu1 - cpu0
	fmt.Printf("| %s | %d | %.0f | %.0f | %s | %.1f ms | %.2f | %.0f |\n", name, n, float64(n)/took.Seconds(),
		ev-ev0, cpu.Round(time.Millisecond), float64(cpu.Microseconds())/1000/(float64(n)/1000),
		cpu.Seconds()/took.Seconds(), fx-fx0)
	return nil
}

func metric(addr, name string) (float64, error) {
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(v, 64)
		}
	}
	io.Copy(io.Discard, resp.Body)
	return 0, fmt.Errorf("%s not on /metrics", name)
}

func numCPU() int {
	b, _ := os.ReadFile("/proc/cpuinfo")
	return strings.Count(string(b), "processor\t:")
}
