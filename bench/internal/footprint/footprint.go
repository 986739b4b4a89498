// Package footprint measures what a benchmark's subject costs and leaves
// behind: a process's CPU time, a directory's files and bytes, a ledger's
// rows per table. The benchmarks print these beside each other in
// docs/performance.md, so they are counted one way.
package footprint

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// ProcCPU is pid's user + system CPU time, from /proc/PID/stat.
func ProcCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	d, err := statCPU(b)
	if err != nil {
		return 0, fmt.Errorf("CPU of pid %d: %w", pid, err)
	}
	return d, nil
}

// statCPU is the CPU time of a /proc/PID/stat line: utime and stime are
// the 12th and 13th fields after the command's closing parenthesis (the
// command may hold spaces and parentheses), in clock ticks (USER_HZ, 100
// on Linux).
func statCPU(b []byte) (time.Duration, error) {
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) <= 12 {
		return 0, fmt.Errorf("stat: %d fields after the command, want 13 or more", len(f))
	}
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100, nil
}

// Dir counts the regular files under dir and their bytes.
func Dir(dir string) (files int, bytes int64, err error) {
	err = filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		files++
		bytes += info.Size()
		return nil
	})
	return files, bytes, err
}

// Rows checkpoints st, so that its size is its data's and not its
// write-ahead log's, and lists its tables' rows: "jobs 12, samples 340".
func Rows(ctx context.Context, st *store.Ledger) (string, error) {
	if err := st.Checkpoint(ctx); err != nil {
		return "", err
	}
	counts, err := st.RowCounts(ctx)
	if err != nil {
		return "", err
	}
	cs := make([]string, 0, len(counts))
	for _, c := range counts {
		cs = append(cs, fmt.Sprintf("%s %d", c.Table, c.Rows))
	}
	return strings.Join(cs, ", "), nil
}
