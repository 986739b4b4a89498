// Command agenthook measures prolog and epilog wall time with the agent up
// (the hooks ask its socket for UUIDs and energy) and down (they
// run hook-gpus, which initialises NVML), side by side, on simulated GPUs; a second
// pair of rows makes nvmlInit take init-delay, as it does on a server
// without persistence mode.
//
//	go run ./bench/agenthook -bin ./bin -n 200
package main

import (
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/aicloud/gpusuite/bench/internal/hooktime"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
)

func main() { os.Exit(run()) }

func run() int {
	bin := flag.String("bin", "bin", "directory with the built prolog, epilog and gpuacct")
	n := flag.Int("n", 200, "invocations per case")
	slowN := flag.Int("slow-n", 10, "invocations per case with a slow nvmlInit")
	delay := flag.Duration("init-delay", time.Second, "nvmlInit time of the slow cases")
	backend := flag.String("backend", "simulated", "simulated, or nvml on a GPU server (no slow cases then)")
	gpus := flag.String("gpus", "0,1", "SLURM_JOB_GPUS of each hook run (device minors)")
	floor := flag.String("floor", "", "the durable-write floor (a build of bench/hooklat/floor): timed first, and each row also as a multiple of its median")
	agentCases := flag.String("agent", "both", "the cases to time: up, down or both")
	flag.Parse()
	states := map[string][]bool{"both": {false, true}, "down": {false}, "up": {true}}[*agentCases]
	if states == nil {
		fmt.Fprintf(os.Stderr, "agenthook: -agent %q: want up, down or both\n", *agentCases)
		return exitcode.Usage
	}
	dir, err := os.MkdirTemp("", "agenthook-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "agenthook:", err)
		return exitcode.Failure
	}
	defer os.RemoveAll(dir)
	fmt.Printf("%s   (n=%d, slow n=%d)\n", hooktime.Header(48), *n, *slowN)
	job := uint64(1)
	var floorMed time.Duration
	if *floor != "" {
		cfg := writeConfig(dir, -1, *backend)
		first := job
		job += uint64(*n)
		ds, err := hooktime.Run(*n, *floor, cfg, func(i int) []string { return hooktime.JobEnv(first+uint64(i), *gpus, "prolog") })
		if err != nil {
			fmt.Fprintf(os.Stderr, "agenthook: floor: %v\n", err)
			return exitcode.Failure
		}
		floorMed = hooktime.Row(os.Stdout, 48, "durable write (Go floor)", ds, 0)
	}
	delays := []time.Duration{0, *delay}
	if *backend == "nvml" {
		delays = delays[:1]
	}
	for _, d := range delays {
		cfg := writeConfig(dir, d, *backend)
		count := *n
		if d > 0 {
			count = *slowN
		}
		suffix := ""
		if d > 0 {
			suffix = fmt.Sprintf(", nvmlInit %s", d)
		}
		for _, up := range states {
			var agent *exec.Cmd
			state := "down"
			if up {
				state = "up"
				agent = exec.Command(filepath.Join(*bin, "gpuacct"), "--config", cfg, "agent")
				agent.Stderr = os.Stderr
				if err := agent.Start(); err != nil {
					fmt.Fprintln(os.Stderr, "agenthook: start agent:", err)
					return exitcode.Failure
				}
				if !waitSocket(filepath.Join(dir, fmt.Sprintf("spool%d", d), "agent.sock"), 30*time.Second) {
					fmt.Fprintln(os.Stderr, "agenthook: agent socket did not appear")
					agent.Process.Kill()
					return exitcode.Failure
				}
			}
			// Each prolog starts a job of its own, which the epilogs end: a
			// run's event is recorded once, so a second prolog of one job
			// would time a duplicate.
			first := job
			job += uint64(count)
			for _, prog := range []string{"prolog", "epilog"} {
				ds, err := hooktime.Run(count, filepath.Join(*bin, prog), cfg, func(i int) []string { return hooktime.JobEnv(first+uint64(i), *gpus, prog) })
				if err != nil {
					fmt.Fprintf(os.Stderr, "agenthook: %s: %v\n", prog, err)
					return exitcode.Failure
				}
				hooktime.Row(os.Stdout, 48, fmt.Sprintf("%s, %s NVML, agent %s%s", prog, *backend, state, suffix), ds, floorMed)
			}
			if agent != nil {
				agent.Process.Signal(os.Interrupt)
				agent.Wait()
			}
		}
	}
	return exitcode.OK
}

func waitSocket(p string, d time.Duration) bool {
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("unix", p); err == nil {
			c.Close()
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func writeConfig(dir string, delay time.Duration, backend string) string {
	root := filepath.Join(dir, fmt.Sprintf("r%d", delay))
	os.MkdirAll(filepath.Join(root, "incoming"), 0o755)
	os.MkdirAll(filepath.Join(root, "live"), 0o755)
	p := filepath.Join(dir, fmt.Sprintf("c%d.toml", delay))
	body := fmt.Sprintf(`[cluster]
name = "bench"
node = "node1"
[spool]
dir = %q
[gpu]
backend = %q
[gpu.simulated]
count = 4
model = "h100"
minors = [2, 3, 0, 1]
init_delay = %q
[agent]
interval = "10s"
state_dir = %q
incoming_dir = %q
metrics_listen = ""
profile_socket = ""
live_dir = %q
`, filepath.Join(dir, fmt.Sprintf("spool%d", delay)), backend, delay.String(), filepath.Join(root, "state"), filepath.Join(root, "incoming"), filepath.Join(root, "live"))
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		panic(err)
	}
	return p
}
