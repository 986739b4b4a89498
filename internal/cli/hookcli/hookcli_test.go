package hookcli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/record"
)

func TestHookCommandLine(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gpusuite.toml")
	body := fmt.Sprintf("[spool]\ndir = %q\n[hooks]\ntimeout = \"5s\"\n", filepath.Join(dir, "file-spool"))
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		kind       record.Kind
		args       []string
		env        map[string]string
		wantCode   int
		wantOut    string // prefix of stdout
		wantErr    []string
		wantSpool  string // spool that must hold exactly one event
		emptySpool string // spool that must hold none
	}{
		{name: "unknown flag records nothing and spares the node", args: []string{"--bogus"},
			wantErr: []string{"prolog: flag provided but not defined: -bogus (run 'prolog --help'); nothing recorded\n"}, emptySpool: "file-spool"},
		{name: "help", kind: record.JobEnd, args: []string{"--help"}, wantErr: []string{"epilog - Slurm Epilog hook", "Epilog=/usr/libexec/gpusuite/epilog", "-spool-dir"}},
		{name: "version", args: []string{"--version"}, wantOut: "prolog, version "},
		{name: "config file's spool", args: []string{"--config", cfg}, wantSpool: "file-spool"},
		{name: "env beats the file", args: []string{"--config", cfg}, env: map[string]string{EnvSpoolDir: filepath.Join(dir, "env-spool")}, wantSpool: "env-spool"},
		{name: "flag beats env", args: []string{"--config", cfg, "--spool-dir", filepath.Join(dir, "flag-spool")},
			env: map[string]string{EnvSpoolDir: filepath.Join(dir, "env-spool2")}, wantSpool: "flag-spool", emptySpool: "env-spool2"},
		{name: "config from env", env: map[string]string{"GPUSUITE_CONFIG": cfg, EnvSpoolDir: filepath.Join(dir, "env-spool3")}, wantSpool: "env-spool3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kind := tt.kind
			if kind == "" {
				kind = record.JobStart
			}
			env := map[string]string{"SLURM_JOB_ID": "42", "SLURMD_NODENAME": "gpu01", "SLURM_CLUSTER_NAME": "c1", "SLURM_JOB_USER": "alice"}
			for k, v := range tt.env {
				env[k] = v
			}
			os.RemoveAll(filepath.Join(dir, "file-spool"))
			var out, errb bytes.Buffer
			code := Main(kind, append([]string{string(kind)}, tt.args...), &out, &errb, func(k string) string { return env[k] })
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d", code, tt.wantCode)
			}
			if !strings.HasPrefix(out.String(), tt.wantOut) {
				t.Errorf("stdout %q, want prefix %q", out.String(), tt.wantOut)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(errb.String(), w) {
					t.Errorf("stderr lacks %q:\n%s", w, errb.String())
				}
			}
			count := func(spool string) int {
				names, _ := filepath.Glob(filepath.Join(dir, spool, "event.*.json"))
				return len(names)
			}
			if tt.wantSpool != "" && count(tt.wantSpool) != 1 {
				t.Errorf("%d events in %s, want 1\n%s", count(tt.wantSpool), tt.wantSpool, errb.String())
			}
			if tt.emptySpool != "" && count(tt.emptySpool) != 0 {
				t.Errorf("%d events in %s, want none", count(tt.emptySpool), tt.emptySpool)
			}
		})
	}
}
