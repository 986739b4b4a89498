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
	"sort"
	"strconv"
	"sync"
	"time"

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
	fmt.Printf("%-34s %8s %8s %8s %10s %10s   (n=%d)\n", "case", "median", "p99", "max", "med/floor", "p99/floor", *n)
	var floorMed time.Duration
	for ci, c := range cases {
		cfg := writeConfig(dir, ci, c.backend)
		var d []time.Duration
		for i := 0; i < *n; i++ {
			cmd := exec.Command(c.prog, "--config", cfg)
			cmd.Env = jobEnv(uint64(ci*100000+i+1), c.gpus, c.prog)
			start := time.Now()
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(os.Stderr, "hooklat: %s: %v\n", c.name, err)
				return exitcode.Failure
			}
			d = append(d, time.Since(start))
		}
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		med, p99 := d[len(d)/2], d[len(d)*99/100]
		if c.prog == floor {
			floorMed = med
		}
		ratios := ""
		if floorMed > 0 && c.prog != floor {
			ratios = fmt.Sprintf(" %9.2fx %9.2fx", float64(med)/float64(floorMed), float64(p99)/float64(floorMed))
		}
		fmt.Printf("%-34s %8s %8s %8s%s\n", c.name, ms(med), ms(p99), ms(d[len(d)-1]), ratios)
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
			cmd.Env = jobEnv(uint64(900000+i), strconv.Itoa(i%4), "prolog")
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
	fmt.Printf("%d concurrent prologs: %d events present, all done in %s\n", *conc, len(got), ms(time.Since(start)))
	if len(got) != *conc {
		return exitcode.Failure
	}
	return exitcode.OK
}

func ms(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }

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

func jobEnv(id uint64, gpus, prog string) []string {
	ctx := "prolog_slurmd"
	if filepath.Base(prog) == "epilog" {
		ctx = "epilog_slurmd"
	}
	env := []string{
		"SLURM_JOB_ID=" + strconv.FormatUint(id, 10), "SLURM_JOB_USER=alice", "SLURM_JOB_UID=1000", "SLURM_JOB_GID=1000",
		"SLURM_JOB_ACCOUNT=team-a", "SLURM_JOB_PARTITION=gpu", "SLURMD_NODENAME=node1", "SLURM_CLUSTER_NAME=bench",
		"SLURM_SCRIPT_CONTEXT=" + ctx, "SLURM_JOB_RESTART_COUNT=0",
	}
	if gpus != "" {
		env = append(env, "SLURM_JOB_GPUS="+gpus, "CUDA_VISIBLE_DEVICES="+gpus)
	}
	if ctx == "epilog_slurmd" {
		env = append(env, "SLURM_JOB_EXIT_CODE=0", "SLURM_JOB_EXIT_CODE2=0:0", "SLURM_JOB_DERIVED_EC=0")
	}
	return env
}
