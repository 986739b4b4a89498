package hookcli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/hook"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

// helpExamples are the example lines of the hook's --help, a line
// continued with a backslash joined to the next.
func helpExamples(t *testing.T, kind record.Kind) []string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(kind, []string{hook.Name(kind), "--help"}, &out, &errb, func(string) string { return "" }); code != 0 {
		t.Fatalf("--help exits %d", code)
	}
	var lines []string
	in, cont := false, ""
	for _, l := range strings.Split(errb.String(), "\n") {
		s := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(s, "Example") && strings.HasSuffix(s, ":"):
			in = true
		case in && s == "":
			in = false
		case in && strings.HasSuffix(s, `\`):
			cont += strings.TrimSuffix(s, `\`)
		case in:
			lines = append(lines, cont+s)
			cont = ""
		}
	}
	return lines
}

// TestHelpExamplesRun runs the example of prolog's and epilog's --help as
// printed, with its environment alone (as slurmd gives it) and the
// configuration it names standing for the test's (a spool of its own):
// it exits 0 and the spool holds the job's event, its GPUs the ones
// SLURM_JOB_GPUS names. Without NVML (or an agent) the event says the
// GPUs' identities are missing, and is still written.
func TestHelpExamplesRun(t *testing.T) {
	for _, kind := range []record.Kind{record.JobStart, record.JobEnd} {
		name := hook.Name(kind)
		exs := helpExamples(t, kind)
		if len(exs) == 0 {
			t.Errorf("%s --help shows no example", name)
		}
		for _, line := range exs {
			t.Run(name+": "+line, func(t *testing.T) {
				env, args, ok := cmdline.EnvArgs(name, line)
				if !ok {
					t.Fatalf("example %q does not run %s", line, name)
				}
				dir := t.TempDir()
				cfg := filepath.Join(dir, "gpusuite.toml")
				spool := filepath.Join(dir, "spool")
				body := fmt.Sprintf("[spool]\ndir = %q\n[agent]\nsocket = %q\n", spool, filepath.Join(dir, "no-agent.sock"))
				if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
				for i, a := range args {
					args[i] = strings.ReplaceAll(a, "/etc/gpusuite/gpusuite.toml", cfg)
				}
				vars := map[string]string{}
				for _, e := range env {
					k, v, _ := strings.Cut(e, "=")
					vars[k] = v
				}
				var out, errb bytes.Buffer
				if code := Main(kind, args, &out, &errb, func(k string) string { return vars[k] }); code != 0 {
					t.Fatalf("example %q exits %d: %s", line, code, errb.String())
				}
				files, _ := filepath.Glob(filepath.Join(spool, "event.*.json"))
				if len(files) != 1 {
					t.Fatalf("example %q: %d events in the spool, want 1; stderr %s", line, len(files), errb.String())
				}
				data, err := os.ReadFile(files[0])
				if err != nil {
					t.Fatal(err)
				}
				var ev record.Event
				if err := json.Unmarshal(data, &ev); err != nil {
					t.Fatal(err)
				}
				want := struct {
					Kind       record.Kind
					ID         uint64
					User, Node string
					GPUs       []int
				}{kind, 42, "alice", "gpu01", []int{0, 1}}
				got := want
				got.Kind, got.ID, got.User, got.Node, got.GPUs = ev.Kind, ev.Job.ID, ev.Job.User, ev.Node, slices.Clone(ev.Job.GPUs)
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("example %q recorded (-want +got):\n%s\n%s", line, d, data)
				}
			})
		}
	}
}
