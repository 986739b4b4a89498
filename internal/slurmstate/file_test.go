package slurmstate

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A view written by WriteFile reads back equal, and the file is never
// half written: the temporary file is gone after the rename.
func TestFileRoundTrip(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "slurm.json")
	at := time.Date(2026, 11, 28, 7, 0, 0, 0, time.UTC)
	st := State{At: at, Nodes: []Node{{Name: "gpu04", State: "MIXED+DRAIN", Base: "MIXED", Flags: []string{"DRAIN"}, Condition: Draining,
		Reason: "simulated", ReasonUser: "root", ReasonTime: at.Add(-time.Hour), Partitions: []string{"gpu"}, CPUs: 64, CPUsAlloc: 32,
		GPUs: []GPU{{Type: "h100", Count: 4, Used: 2}}, GPUCount: 4, GPUsUsed: 2}},
		Reservations: []Reservation{{Name: "r", Start: at.Add(-time.Hour), End: at.Add(time.Hour), NodeList: "gpu03", Nodes: []string{"gpu03"},
			Accounts: []string{"nlp"}, State: "ACTIVE"}}}
	for range 2 { // the second write replaces the first
		if err := WriteFile(path, st); err != nil {
			t.Fatal(err)
		}
	}
	got, err := ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(st, got); d != "" {
		t.Errorf("read back (-want +got):\n%s", d)
	}
	names, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil || len(names) != 1 {
		t.Errorf("directory holds %v (%v); want slurm.json alone", names, err)
	}
}

// A missing, garbage, foreign, oversized or non-regular file is one
// line that names it and says why.
func TestReadFileRefuses(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	big := write("big.json", `{"schema":"`+FileSchema+`","state":{"At":"2026-11-28T07:00:00Z","Nodes":[`+strings.Repeat(`{"Name":"n"},`, MaxFileBytes/12)+`{}]}}`)
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(write("target.json", `{"schema":"`+FileSchema+`","state":{"At":"2026-11-28T07:00:00Z"}}`), link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, want string
	}{
		{"missing", filepath.Join(dir, "none.json"), "no such file"},
		{"garbage", write("garbage.json", "scontrol: error\n"), "not a Slurm view file"},
		{"unknown field", write("extra.json", `{"schema":"`+FileSchema+`","state":{"At":"2026-11-28T07:00:00Z"},"x":1}`), "unknown field"},
		{"other schema", write("other.json", `{"schema":"gpusuite.live/v1","state":{"At":"2026-11-28T07:00:00Z"}}`), `schema "gpusuite.live/v1"`},
		{"no time", write("notime.json", `{"schema":"`+FileSchema+`","state":{}}`), "no state.At"},
		{"two documents", write("two.json", `{"schema":"`+FileSchema+`","state":{"At":"2026-11-28T07:00:00Z"}} {}`), "data after the document"},
		{"too big", big, "larger than 16 MiB"},
		{"link", link, "too many levels of symbolic links"},
		{"fifo", fifo, "not a regular file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadFile(tc.path)
			if err == nil {
				t.Fatal("read; want an error")
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.want) || !strings.Contains(msg, tc.path) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line naming %s and saying %q", msg, tc.path, tc.want)
			}
		})
	}
}
