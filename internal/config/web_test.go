package config

import (
	"strings"
	"testing"
	"time"
)

func TestWebSection(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string // error substring; "" = valid
	}{
		{name: "defaults", toml: ""},
		{name: "all keys", toml: "[web]\nenabled = false\nlisten = \"0.0.0.0:8080\"\nmax_age = \"1m\""},
		{name: "listen without port", toml: "[web]\nlisten = \"localhost\"", want: `key "web.listen": "localhost" is not host:port`},
		{name: "negative max_age", toml: "[web]\nmax_age = \"-1s\"", want: `key "web.max_age": -1s is outside 0s..24h`},
		{name: "max_age over a day", toml: "[web]\nmax_age = \"25h\"", want: `key "web.max_age"`},
		{name: "unknown key", toml: "[web]\nport = 80", want: `unknown key "web.port"`},
		{name: "bounds", toml: "[web]\nconcurrent = 8\ntimeout = \"1m\""},
		{name: "no concurrency", toml: "[web]\nconcurrent = 0", want: `key "web.concurrent": 0 is outside 1..64`},
		{name: "max_streams", toml: "[web]\nmax_streams = 100000"},
		{name: "no streams", toml: "[web]\nmax_streams = 0", want: `key "web.max_streams": 0 is outside 1..100000`},
		{name: "too many streams", toml: "[web]\nmax_streams = 100001", want: `key "web.max_streams": 100001 is outside 1..100000`},
		{name: "timeout too short", toml: "[web]\ntimeout = \"10ms\"", want: `key "web.timeout": 10ms is outside 1s..10m`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			err := Parse([]byte(tc.toml), &cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
	d := Default().Web
	if !d.Enabled || d.Listen != "" || d.MaxAge.Duration != 30*time.Second || d.Concurrent != 4 || d.Timeout.Duration != 30*time.Second || d.MaxStreams != 1000 {
		t.Errorf("defaults: %+v", d)
	}
}
