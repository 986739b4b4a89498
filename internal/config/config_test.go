package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/files"
)

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string { return files.Write(t, filepath.Join(dir, name), body) }
	good := write("good.toml", "[spool]\ndir = \"/x\"\n[hooks]\ntimeout = \"3s\"\n[gpu]\nbackend = \"simulated\"\n[gpu.simulated]\ncount = 2\nminors = [1, 0]\n")
	unreadable := write("unreadable.toml", "")
	if err := os.Chmod(unreadable, 0); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		path     string
		explicit bool
		wantErr  []string // substrings that must all appear
		check    func(Config) bool
	}{
		{name: "default path absent is fine", path: filepath.Join(dir, "absent.toml"), check: func(c Config) bool { return cmp.Equal(c, Default()) }},
		{name: "explicit path absent", path: filepath.Join(dir, "absent.toml"), explicit: true, wantErr: []string{"absent.toml", "no such file"}},
		{name: "good", path: good, explicit: true, check: func(c Config) bool {
			return c.Spool.Dir == "/x" && c.Hooks.Timeout.Duration == 3*time.Second && c.GPU.Backend == "simulated" &&
				cmp.Equal(c.GPU.Simulated.Minors, []int{1, 0}) && c.Hooks.NVMLTimeout == Default().Hooks.NVMLTimeout
		}},
		{name: "unknown key", path: write("unknown.toml", "[hooks]\n\ntimout = \"3s\"\n"), explicit: true, wantErr: []string{"unknown.toml", "line 3", `"hooks.timout"`}},
		{name: "unknown section", path: write("sect.toml", "[bogus]\nx = 1\n"), explicit: true, wantErr: []string{"line 1", `"bogus"`}},
		{name: "bare integer duration", path: write("int.toml", "[hooks]\ntimeout = 3\n"), explicit: true, wantErr: []string{"int.toml", "line 2", `"hooks.timeout"`, `"3" is not a duration`}},
		{name: "wrong type", path: write("type.toml", "[gpu.simulated]\ncount = \"four\"\n"), explicit: true, wantErr: []string{"type.toml", "line 2", `"gpu.simulated.count"`}},
		{name: "bad duration", path: write("dur.toml", "[hooks]\ntimeout = \"soon\"\n"), explicit: true, wantErr: []string{"line 2", `"hooks.timeout"`, "duration"}},
		{name: "syntax", path: write("syntax.toml", "[hooks\n"), explicit: true, wantErr: []string{"syntax.toml", "line 1"}},
		{name: "bad backend", path: write("backend.toml", "[gpu]\nbackend = \"cuda\"\n"), explicit: true, wantErr: []string{`"gpu.backend"`, "cuda"}},
		{name: "minors count", path: write("minors.toml", "[gpu.simulated]\ncount = 2\nminors = [0]\n"), explicit: true, wantErr: []string{"gpu.simulated.minors"}},
		{name: "bad log level", path: write("level.toml", "[hooks]\nlog_level = \"loud\"\n"), explicit: true, wantErr: []string{"hooks.log_level"}},
		{name: "directory", path: dir, explicit: true, wantErr: []string{"read config", "a directory, not a regular file"}},
		{name: "bad backend has a line", path: write("backend2.toml", "[spool]\ndir = \"/x\"\n[gpu]\nbackend = \"cuda\"\n"), explicit: true, wantErr: []string{"backend2.toml", "line 4", `"gpu.backend"`}},
		{name: "relative hooks root", path: write("root.toml", "[hooks]\nroot = \"node\"\n"), explicit: true, wantErr: []string{"root.toml", "line 2", `"hooks.root"`, "not an absolute path"}},
		{name: "hooks root", path: write("root2.toml", "[hooks]\nroot = \"/srv/node\"\n"), explicit: true, check: func(c Config) bool { return c.Hooks.Root == "/srv/node" }},
		{name: "relative spool", path: write("rel.toml", "[spool]\ndir = \"spool\"\n"), explicit: true, wantErr: []string{"rel.toml", "line 2", `"spool.dir"`, "not an absolute path"}},
		{name: "dotted relative spool", path: write("rel2.toml", "# x\nspool.dir = \"./s\"\n"), explicit: true, wantErr: []string{"line 2", `"spool.dir"`, "not an absolute path"}},
		{name: "inline relative spool", path: write("rel3.toml", "\nspool = { dir = \"s\" }\n"), explicit: true, wantErr: []string{"line 2", `"spool.dir"`}},
		{name: "absurd hook timeout", path: write("long.toml", "[hooks]\ntimeout = \"100000h\"\n"), explicit: true, wantErr: []string{"long.toml", "line 2", `"hooks.timeout"`, "above the 30s maximum"}},
		{name: "tiny hook timeout", path: write("short.toml", "[hooks]\ntimeout = \"10ms\"\n"), explicit: true, wantErr: []string{"line 2", `"hooks.timeout"`, "below the 100ms minimum"}},
		{name: "negative hook timeout", path: write("neg.toml", "[hooks]\ntimeout = \"-1s\"\n"), explicit: true, wantErr: []string{"line 2", `"hooks.timeout"`}},
		{name: "absurd nvml timeout", path: write("nvml.toml", "[hooks]\nnvml_timeout = \"1h\"\n"), explicit: true, wantErr: []string{"line 2", `"hooks.nvml_timeout"`, "maximum"}},
		{name: "absurd socket timeout", path: write("sock.toml", "[agent]\nsocket_timeout = \"5m\"\n"), explicit: true, wantErr: []string{"line 2", `"agent.socket_timeout"`, "maximum"}},
		{name: "negative init delay", path: write("delay.toml", "[gpu.simulated]\ninit_delay = \"-1s\"\n"), explicit: true, wantErr: []string{"line 2", `"gpu.simulated.init_delay"`, "negative"}},
		{name: "hook timeout at its bounds", path: write("bounds.toml", "[hooks]\ntimeout = \"30s\"\nnvml_timeout = \"30s\"\n[agent]\nsocket_timeout = \"30s\"\n"), explicit: true, check: func(c Config) bool {
			return c.Hooks.Timeout.Duration == 30*time.Second && c.Agent.SocketTimeout.Duration == 30*time.Second
		}},
		{name: "BOM", path: write("bom.toml", "\xEF\xBB\xBF[spool]\ndir = \"/bom\"\n"), explicit: true, check: func(c Config) bool { return c.Spool.Dir == "/bom" }},
		{name: "named pipe", path: fifo(t, dir), explicit: true, wantErr: []string{"read config", "named pipe"}},
		{name: "huge file", path: write("huge.toml", "#"+strings.Repeat("x", MaxFileBytes)+"\n"), explicit: true, wantErr: []string{"huge.toml", "larger than"}},
	}
	if os.Geteuid() != 0 { // root reads anything
		tests = append(tests, struct {
			name     string
			path     string
			explicit bool
			wantErr  []string
			check    func(Config) bool
		}{name: "unreadable", path: unreadable, explicit: true, wantErr: []string{"permission denied"}})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Load(tt.path, tt.explicit)
			if len(tt.wantErr) > 0 {
				if err == nil {
					t.Fatalf("no error, want %q", tt.wantErr)
				}
				for _, w := range tt.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("error %q lacks %q", err, w)
					}
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("error is not one line: %q", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.check != nil && !tt.check(got) {
				t.Errorf("unexpected config %+v", got)
			}
		})
	}
}

func TestPath(t *testing.T) {
	env := func(v string) func(string) string { return func(string) string { return v } }
	tests := []struct {
		flag, env, want string
		explicit        bool
	}{
		{"", "", DefaultPath, false},
		{"", "/e.toml", "/e.toml", true},
		{"/f.toml", "/e.toml", "/f.toml", true},
	}
	for _, tt := range tests {
		got, explicit := Path(tt.flag, env(tt.env))
		if got != tt.want || explicit != tt.explicit {
			t.Errorf("Path(%q, %q) = %q, %v; want %q, %v", tt.flag, tt.env, got, explicit, tt.want, tt.explicit)
		}
	}
}

// The commented example under packaging/ must load: it documents every key.
func TestExampleConfigLoads(t *testing.T) {
	p := filepath.Join("..", "..", "packaging", "gpusuite.toml.example")
	if _, err := Load(p, true); err != nil {
		t.Fatalf("packaging example: %v", err)
	}
}

// fifo makes a named pipe with no writer: opening it for reading blocks
// unless the reader refuses it.
func fifo(t *testing.T, dir string) string {
	t.Helper()
	p := filepath.Join(dir, "fifo.toml")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestClock: gpu.simulated.clock_offset shifts the simulated node's clock
// only, and an offset beyond an hour is refused by name.
func TestClock(t *testing.T) {
	tests := []struct {
		name    string
		backend string
		offset  time.Duration
		want    time.Duration // how far ahead of time.Now the clock reads
		wantErr string
	}{
		{name: "simulated node ahead", backend: "simulated", offset: 4 * time.Second, want: 4 * time.Second},
		{name: "simulated node behind", backend: "simulated", offset: -3 * time.Second, want: -3 * time.Second},
		{name: "real GPUs keep the real clock", backend: "nvml", offset: 4 * time.Second, want: 0},
		{name: "more than an hour", backend: "simulated", offset: 2 * time.Hour, wantErr: `"gpu.simulated.clock_offset"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			c.GPU.Backend = tt.backend
			c.GPU.Simulated.ClockOffset = Dur(tt.offset)
			err := c.Validate()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Validate() = %v, want an error naming %s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Validate() = %v", err)
			}
			before := time.Now()
			got := c.GPU.Clock()()
			after := time.Now()
			if got.Before(before.Add(tt.want)) || got.After(after.Add(tt.want)) {
				t.Errorf("Clock() read %s, want between %s and %s", got, before.Add(tt.want), after.Add(tt.want))
			}
		})
	}
}

// parsed is the default configuration with toml over it. Where wantErr
// is set, it fails the test unless parsing fails with one line that
// holds wantErr, and returns false: the case has nothing left to check.
func parsed(t *testing.T, toml, wantErr string) (Config, bool) {
	t.Helper()
	cfg := Default()
	err := Parse([]byte(toml), &cfg)
	if wantErr != "" {
		if err == nil || !strings.Contains(err.Error(), wantErr) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("error %v, want one line containing %q", err, wantErr)
		}
		return Config{}, false
	}
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
	return cfg, true
}
