package slurm

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The job a process belongs to, read from the cgroup slurmd's cgroup
// plugin puts it in (cgroup v1 and v2 paths both hold "/job_ID").

// JobOfPID returns the Slurm job whose cgroup holds pid, 0 if none or
// unreadable.
func JobOfPID(procRoot string, pid int) uint64 {
	if procRoot == "" {
		procRoot = "/proc"
	}
	data, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "cgroup"))
	if err != nil {
		return 0
	}
	return ParseCgroupJob(string(data))
}

// ParseCgroupJob finds the job id in the text of /proc/PID/cgroup: the
// first "/job_DIGITS" followed by "/" or the end of its line. Parsed by
// hand: a package-level regexp is compiled at every hook's start.
func ParseCgroupJob(s string) uint64 {
	for _, line := range strings.Split(s, "\n") {
		if id, ok := cgroupJob(line); ok {
			if v, err := strconv.ParseUint(id, 10, 64); err == nil {
				return v
			}
		}
	}
	return 0
}

// cgroupJob returns the digits of the first "/job_DIGITS" in line that ends
// there or at a "/".
func cgroupJob(line string) (string, bool) {
	const mark = "/job_"
	for rest := line; ; {
		i := strings.Index(rest, mark)
		if i < 0 {
			return "", false
		}
		rest = rest[i+len(mark):]
		n := 0
		for n < len(rest) && '0' <= rest[n] && rest[n] <= '9' {
			n++
		}
		if n > 0 && (n == len(rest) || rest[n] == '/') {
			return rest[:n], true
		}
	}
}
