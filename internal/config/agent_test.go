package config

import "testing"

func TestAgentSection(t *testing.T) {
	tests := []struct {
		name string
		toml string
		want string // error substring; "" = valid
	}{
		{name: "defaults", toml: ""},
		{name: "all keys", toml: `[agent]
interval = "1s"
incoming_dir = "/data/in"
ship_user = "gpuacct"
state_dir = "/var/lib/x"
socket = "/run/gpusuite/agent.sock"
socket_timeout = "300ms"
nvml_timeout = "1s"
segment_duration = "1m"
ship_interval = "10s"
ship_backoff_max = "1m"
spool_max_bytes = 10485760
idle_threshold = 5.0
reinit_after = "30s"
metrics_listen = ""
proc_root = "/proc"
log_level = "debug"
metrics = ["default", "gpm", "nvlink_tx_bytes_per_s"]
profile_socket = "/run/gpusuite/profile.sock"
profile_max_duration = "2h"`},
		{name: "every metric", toml: "[agent]\nmetrics = [\"all\"]"},
		{name: "unknown metric", toml: "[agent]\nmetrics = [\"gpm\", \"sm_busy\"]", want: `key "agent.metrics": unknown metric or set "sm_busy": sets are default, clocks`},
		{name: "metrics not a list", toml: "[agent]\nmetrics = \"gpm\"", want: `"agent.metrics"`},
		{name: "relative profile socket", toml: "[agent]\nprofile_socket = \"p.sock\"", want: `key "agent.profile_socket": "p.sock" is not an absolute path`},
		{name: "profiling off", toml: "[agent]\nprofile_socket = \"\""},
		{name: "profile too long", toml: "[agent]\nprofile_max_duration = \"48h\"", want: `key "agent.profile_max_duration": 48h0m0s is outside 1s..24h0m0s`},
		{name: "interval too short", toml: "[agent]\ninterval = \"500ms\"", want: `key "agent.interval": 500ms is below the 1s minimum`},
		{name: "interval as a number", toml: "[agent]\ninterval = 10", want: `"10" is not a duration`},
		{name: "relative incoming", toml: "[agent]\nincoming_dir = \"in\"", want: `key "agent.incoming_dir": "in" is not an absolute path`},
		{name: "relative socket", toml: "[agent]\nsocket = \"a.sock\"", want: `key "agent.socket"`},
		{name: "zero timeout", toml: "[agent]\nsocket_timeout = \"0s\"", want: `key "agent.socket_timeout": must be positive`},
		{name: "segment shorter than interval", toml: "[agent]\ninterval = \"10s\"\nsegment_duration = \"5s\"", want: `key "agent.segment_duration"`},
		{name: "tiny spool", toml: "[agent]\nspool_max_bytes = 1000", want: `key "agent.spool_max_bytes"`},
		{name: "threshold over 100", toml: "[agent]\nidle_threshold = 150.0", want: `key "agent.idle_threshold"`},
		{name: "bad level", toml: "[agent]\nlog_level = \"loud\"", want: `key "agent.log_level"`},
		{name: "unknown key", toml: "[agent]\nintervall = \"1s\"", want: `unknown key "agent.intervall"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parsed(t, tt.toml, tt.want)
		})
	}
}

func TestAgentSocketPath(t *testing.T) {
	a := defaultAgent()
	if got := a.SocketPath("/var/spool/gpusuite"); got != "/var/spool/gpusuite/agent.sock" {
		t.Errorf("default socket %q", got)
	}
	a.Socket = "/run/gpusuite/agent.sock"
	if got := a.SocketPath("/var/spool/gpusuite"); got != a.Socket {
		t.Errorf("configured socket %q", got)
	}
}
