// Command floor is the durable-write floor bench/hooklat measures the
// hooks against: a Go program that writes one event-sized record into the
// spool through the hooks' own durable write (internal/spool: temp file,
// fsync, link to its name, directory fsync), and nothing else: no config,
// no GPU, no logging.
//
//	floor --config FILE   (FILE's spool.dir line names the spool)
package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/spool"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(exitcode.Failure)
	}
}

func run() error {
	if len(os.Args) != 3 || os.Args[1] != "--config" {
		return fmt.Errorf("usage: floor --config FILE")
	}
	dir, err := spoolDir(os.Args[2])
	if err != nil {
		return err
	}
	sp := spool.Dir{Path: dir}
	if err := sp.Ensure(); err != nil {
		return err
	}
	id := os.Getenv("SLURM_JOB_ID")
	// About the size of a prolog's event with two GPUs.
	body := fmt.Sprintf(`{"schema":"gpusuite.event/v1","kind":"job_start","time":%q,"job":{"id":%s,"user":%q,"account":%q,"partition":%q},"gpus":[{"minor":0,"uuid":"GPU-00000000-0000-0000-0000-000000000000","energy_mj":1},{"minor":1,"uuid":"GPU-00000000-0000-0000-0000-000000000001","energy_mj":1}],"pad":%q}`,
		time.Now().UTC().Format(time.RFC3339Nano), id, os.Getenv("SLURM_JOB_USER"), os.Getenv("SLURM_JOB_ACCOUNT"), os.Getenv("SLURM_JOB_PARTITION"), strings.Repeat("x", 400))
	// The hooks' own durable write (temp, fsync, link, directory fsync).
	return sp.Write("event.floor."+id+".json", []byte(body))
}

// spoolDir reads the spool.dir line of the hooks' config as hooklat
// writes it (dir = "...").
func spoolDir(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(strings.TrimSpace(sc.Text()), "dir = "); ok {
			return strings.Trim(v, `"`), nil
		}
	}
	return "", fmt.Errorf("%s names no spool dir", path)
}
