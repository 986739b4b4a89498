package agent

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

func TestCleanProcName(t *testing.T) {
	for _, tc := range []struct {
		name, argv0, want string
	}{
		{"a path's base", "/usr/bin/python3", "python3"},
		{"a bare name", "torchrun", "torchrun"},
		{"a trailing slash", "/opt/app/", "app"},
		{"control characters dropped", "py\x1b[31mthon\n\t", "py[31mthon"},
		{"invalid UTF-8 dropped", "a\xffb", "ab"},
		{"truncated to 32 bytes", strings.Repeat("x", 40), strings.Repeat("x", 32)},
		{"cut at a rune's boundary", strings.Repeat("x", 30) + "日本", strings.Repeat("x", 30)},
		{"a slash cuts as in a path, markup left to the templates", "<b>x</b>", "b>"},
		{"empty", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, cleanProcName(tc.argv0)); d != "" {
				t.Errorf("cleanProcName(%q) (-want +got):\n%s", tc.argv0, d)
			}
		})
	}
}

// TestProcNameReal reads a real child's name from the real /proc, through
// the live writer as the agent does, and none once it has gone.
func TestProcNameReal(t *testing.T) {
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(sleep, "300")
	cmd.Args[0] = "/nowhere/gpusuite-named-sleeper"
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := uint32(cmd.Process.Pid)
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })

	w := &liveWriter{procRoot: "/proc", users: map[uint32]string{}}
	l := &record.Live{GPUs: []record.LiveGPU{{Procs: []record.LiveProc{{PID: pid}}}}}
	w.fillUsers(l)
	if d := cmp.Diff("gpusuite-named-sleeper", l.GPUs[0].Procs[0].Name); d != "" {
		t.Errorf("name in the live state (-want +got):\n%s", d)
	}

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait() // reaped: its /proc entry is gone
	if got := procName("/proc", pid); got != "" {
		t.Errorf("name of a gone process = %q, want none", got)
	}
}
