package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A file that fails to load still gives the hooks its spool, cluster and GPU
// backend when those are valid on their own.
func TestLoadHookSalvages(t *testing.T) {
	const good = "[cluster]\nname = \"prod\"\n[spool]\ndir = \"/srv/spool\"\n[gpu]\nbackend = \"simulated\"\n[gpu.simulated]\ncount = 2\nminors = [1, 0]\n"
	type want struct {
		spool, cluster, backend string
		count                   int
		timeout                 time.Duration
		salvaged                []string
		err                     []string
	}
	all := []string{"spool.dir", "cluster.name", "gpu.backend", "gpu.simulated.count", "gpu.simulated.minors"}
	def := Default()
	tests := []struct {
		name string
		body string
		want want
	}{
		{name: "valid file", body: good, want: want{spool: "/srv/spool", cluster: "prod", backend: "simulated", count: 2, timeout: def.Hooks.Timeout.Duration}},
		{name: "unknown key", body: good + "[hooks]\ntimout = \"3s\"\n",
			want: want{spool: "/srv/spool", cluster: "prod", backend: "simulated", count: 2, timeout: def.Hooks.Timeout.Duration, salvaged: all, err: []string{"line 11", `unknown key "hooks.timout"`}}},
		{name: "BOM and an unknown key", body: "\xEF\xBB\xBFbogus = 1\n" + good,
			want: want{spool: "/srv/spool", cluster: "prod", backend: "simulated", count: 2, timeout: def.Hooks.Timeout.Duration, salvaged: all, err: []string{"line 1", `unknown key "bogus"`}}},
		{name: "bad value elsewhere", body: good + "[hooks]\ntimeout = \"3s\"\nlog_level = \"loud\"\n",
			want: want{spool: "/srv/spool", cluster: "prod", backend: "simulated", count: 2, timeout: 3 * time.Second,
				salvaged: []string{"spool.dir", "cluster.name", "hooks.timeout", "gpu.backend", "gpu.simulated.count", "gpu.simulated.minors"}, err: []string{"line 12", `"hooks.log_level"`}}},
		{name: "absurd timeout is not taken", body: good + "[hooks]\ntimeout = \"100000h\"\n",
			want: want{spool: "/srv/spool", cluster: "prod", backend: "simulated", count: 2, timeout: def.Hooks.Timeout.Duration, salvaged: all, err: []string{"line 11", `"hooks.timeout"`, "maximum"}}},
		{name: "syntax error", body: "[hooks]\ntimeout = 1s\n" + good + "[container\nx = 1\n",
			want: want{spool: "/srv/spool", cluster: "prod", backend: "simulated", count: 2, timeout: def.Hooks.Timeout.Duration, salvaged: all, err: []string{"line 2"}}},
		{name: "relative spool is not taken", body: "[cluster]\nname = \"prod\"\n[spool]\ndir = \"spool\"\n",
			want: want{spool: def.Spool.Dir, cluster: "prod", backend: def.GPU.Backend, count: def.GPU.Simulated.Count, timeout: def.Hooks.Timeout.Duration,
				salvaged: []string{"cluster.name"}, err: []string{"line 4", `"spool.dir"`}}},
		{name: "health check is never taken", body: "[spool]\ndir = \"/s\"\n[hooks]\nhealth_check = true\nbogus = 1\n",
			want: want{spool: "/s", cluster: def.Cluster.Name, backend: def.GPU.Backend, count: def.GPU.Simulated.Count, timeout: def.Hooks.Timeout.Duration,
				salvaged: []string{"spool.dir"}, err: []string{`"hooks.bogus"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "gpusuite.toml")
			if err := os.WriteFile(p, []byte(tt.body), 0o644); err != nil {
				t.Fatal(err)
			}
			cfg, salvaged, err := LoadHook(p, true, time.Minute)
			got := want{spool: cfg.Spool.Dir, cluster: cfg.Cluster.Name, backend: cfg.GPU.Backend, count: cfg.GPU.Simulated.Count,
				timeout: cfg.Hooks.Timeout.Duration, salvaged: salvaged}
			if err != nil {
				got.err = tt.want.err
				for _, w := range tt.want.err {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("(-want +got)\n%s\nerr: %v", diff, err)
			}
			if cfg.Hooks.HealthCheck {
				t.Error("health check taken from a broken file")
			}
		})
	}
}

// A file that never answers (a hung mount) costs the hook the read bound,
// not its run.
func TestLoadHookReadBound(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	hung := func(string) ([]byte, error) { <-block; return nil, nil }
	done := make(chan error, 1)
	go func() {
		cfg, salvaged, err := loadHook("/hung/gpusuite.toml", true, 50*time.Millisecond, hung)
		if err == nil || !cmp.Equal(cfg, Default()) || salvaged != nil {
			t.Errorf("hung read: %v, %v, %+v", err, salvaged, cfg)
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil && !strings.Contains(err.Error(), `read config "/hung/gpusuite.toml": no answer within 50ms`) {
			t.Errorf("error %q", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("LoadHook did not return on a file that never answers")
	}
}

// A named pipe is refused at once: opening it must not wait for a writer.
func TestLoadHookFIFO(t *testing.T) {
	p := fifo(t, t.TempDir())
	done := make(chan error, 1)
	go func() {
		_, _, err := LoadHook(p, true, time.Minute) // the bound is not what saves it
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "named pipe, not a regular file") {
			t.Errorf("error %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("LoadHook blocked on a named pipe")
	}
}

// The largest file the reader accepts, all broken lines, still loads well
// inside the hook's bound: the bound covers parsing, not only the read.
func BenchmarkLoadHookWorstFile(b *testing.B) {
	p := filepath.Join(b.TempDir(), "gpusuite.toml")
	body := strings.Repeat("[spool]\ndir = 1s\n", MaxFileBytes/len("[spool]\ndir = 1s\n"))
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, _, err := loadHook(p, true, time.Minute, ReadFile); err == nil {
			b.Fatal("no error")
		}
	}
}
