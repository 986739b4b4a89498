// Command hooklat measures prolog/epilog wall time per invocation (median,
// p99) side by side with two floors, /bin/true (exec alone) and a static Go
// program that writes the same record durably (bench/hooklat/floor), with
// each hook's median and p99 as multiples of the durable-write floor's
// median; then it runs N concurrent prologs to check that every event
// arrives.
//
//	go run ./bench/hooklat -bin ./bin -n 300
package main

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/bench/internal/hooktime"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
)

func main() { os.Exit(run()) }

func run() int {
	bin := flag.String("bin", "bin", "directory with the built prolog and epilog")
	n := flag.Int("n", 300, "invocations per case")
	conc := flag.Int("concurrent", 64, "concurrent prologs on one node")
	flag.Parse()
	dir, err := os.MkdirTemp("", "hooklat-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "hooklat:", err)
		return exitcode.Failure
	}
	defer os.RemoveAll(dir)

	// The durable-write floor: a static Go program that writes the same
	// record the same way, and nothing else.
	floor := filepath.Join(dir, "floor")
	build := exec.Command("go", "build", "-o", floor, "./bench/hooklat/floor")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "hooklat: build the floor: %v\n%s", err, out)
		return exitcode.Failure
	}
	cases := []struct {
		name, prog, backend string
		gpus                string
	}{
		{"/bin/true (exec floor)", "/bin/true", "", ""},
		{"durable write (Go floor)", floor, "", ""},
		{"prolog, no GPU", filepath.Join(*bin, "prolog"), "simulated", ""},
		{"prolog, 2 GPUs, simulated NVML", filepath.Join(*bin, "prolog"), "simulated", "0,1"},
		{"epilog, 2 GPUs, simulated NVML", filepath.Join(*bin, "epilog"), "simulated", "0,1"},
		{"prolog, 2 GPUs, no driver", filepath.Join(*bin, "prolog"), "nvml", "0,1"},
	}
	fmt.Printf("%s   (n=%d)\n", hooktime.Header(34), *n)
	var floorMed time.Duration
	for ci, c := range cases {
		cfg := writeConfig(dir, ci, c.backend)
		d, err := hooktime.Run(*n, c.prog, cfg, func(i int) []string { return hooktime.JobEnv(uint64(ci*100000+i+1), c.gpus, c.prog) })
		if err != nil {
			fmt.Fprintf(os.Stderr, "hooklat: %s: %v\n", c.name, err)
			return exitcode.Failure
		}
		if c.prog == floor {
			floorMed = hooktime.Row(os.Stdout, 34, c.name, d, 0)
			continue
		}
		hooktime.Row(os.Stdout, 34, c.name, d, floorMed)
	}

	// Concurrent prologs, as when many jobs start at once on one node.
	cfg := writeConfig(dir, 99, "simulated")
	var wg sync.WaitGroup
	start := time.Now()
	errs := make(chan error, *conc)
	for i := 0; i < *conc; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			cmd := exec.Command(filepath.Join(*bin, "prolog"), "--config", cfg)
			cmd.Env = hooktime.JobEnv(uint64(900000+i), strconv.Itoa(i%4), "prolog")
			if err := cmd.Run(); err != nil {
				errs <- err
			}
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		fmt.Fprintln(os.Stderr, "hooklat: concurrent prolog:", err)
		return exitcode.Failure
	}
	got, _ := filepath.Glob(filepath.Join(dir, "spool99", "event.*.job_start.json"))
	fmt.Printf("%d concurrent prologs: %d events present, all done in %s\n", *conc, len(got), hooktime.MS(time.Since(start)))
	if len(got) != *conc {
		return exitcode.Failure
	}
	return exitcode.OK
}

func writeConfig(dir string, i int, backend string) string {
	p := filepath.Join(dir, fmt.Sprintf("c%d.toml", i))
	if backend == "" {
		backend = "simulated"
	}
	body := fmt.Sprintf("[spool]\ndir = %q\n[gpu]\nbackend = %q\n", filepath.Join(dir, fmt.Sprintf("spool%d", i)), backend)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		panic(err)
	}
	return p
}
