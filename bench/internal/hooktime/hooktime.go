// Package hooktime runs the built prolog and epilog as slurmd runs them
// and times them, for bench/hooklat and bench/agenthook: both must time
// the same job environment and print their rows alike to be compared.
package hooktime

import (
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"
)

// JobEnv is the environment slurmd gives prog (a prolog or epilog, by
// its base name) for job id; gpus, when set, are its SLURM_JOB_GPUS.
func JobEnv(id uint64, gpus, prog string) []string {
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

// Run runs prog --config cfg n times one after the other, the i-th with
// env(i), and returns each run's wall time; the first run that fails
// ends it.
func Run(n int, prog, cfg string, env func(i int) []string) ([]time.Duration, error) {
	ds := make([]time.Duration, 0, n)
	for i := range n {
		cmd := exec.Command(prog, "--config", cfg)
		cmd.Env = env(i)
		start := time.Now()
		if err := cmd.Run(); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(start))
	}
	return ds, nil
}

// Header is the heading of Row's columns, the case's name width wide.
func Header(width int) string {
	return fmt.Sprintf("%-*s %8s %8s %8s %10s %10s", width, "case", "median", "p99", "max", "med/floor", "p99/floor")
}

// Row sorts ds and writes name's median, p99 and max, and with a floor
// (the floor's median; 0: none) the median and p99 as multiples of it.
// It returns the median.
func Row(w io.Writer, width int, name string, ds []time.Duration, floor time.Duration) time.Duration {
	slices.Sort(ds)
	med, p99 := ds[len(ds)/2], ds[len(ds)*99/100]
	ratios := ""
	if floor > 0 {
		ratios = fmt.Sprintf(" %9.2fx %9.2fx", float64(med)/float64(floor), float64(p99)/float64(floor))
	}
	fmt.Fprintf(w, "%-*s %8s %8s %8s%s\n", width, name, MS(med), MS(p99), MS(ds[len(ds)-1]), ratios)
	return med
}

// MS is d in milliseconds to the hundredth, as the rows show it.
func MS(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d.Microseconds())/1000) }
