package config

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
		{name: "streams per client off", toml: "[web]\nmax_streams_per_client = 0"},
		{name: "streams per client", toml: "[web]\nmax_streams_per_client = 100000"},
		{name: "negative streams per client", toml: "[web]\nmax_streams_per_client = -1", want: `key "web.max_streams_per_client": -1 is outside 0..100000 (0: no bound)`},
		{name: "too many streams per client", toml: "[web]\nmax_streams_per_client = 100001", want: `key "web.max_streams_per_client": 100001 is outside 0..100000`},
		{name: "trusted proxies", toml: "[web]\ntrusted_proxies = [\"10.0.0.5\", \"192.168.0.0/16\", \"fd00::1\", \"2001:db8::/48\", \"::ffff:10.0.0.7\"]"},
		{name: "trusted proxy not an address", toml: "[web]\ntrusted_proxies = [\"proxy.example.org\"]", want: `key "web.trusted_proxies": "proxy.example.org" is not an address or CIDR prefix (e.g. 10.0.0.5, 10.0.0.0/24, fd00::/64)`},
		{name: "trusted proxy bad prefix", toml: "[web]\ntrusted_proxies = [\"10.0.0.0/33\"]", want: `key "web.trusted_proxies": "10.0.0.0/33" is not an address or CIDR prefix`},
		{name: "trusted proxy with port", toml: "[web]\ntrusted_proxies = [\"10.0.0.5:80\"]", want: `key "web.trusted_proxies": "10.0.0.5:80" is not an address`},
		{name: "trusted proxy with zone", toml: "[web]\ntrusted_proxies = [\"fe80::1%eth0\"]", want: `key "web.trusted_proxies": "fe80::1%eth0" has a zone: write the address without %eth0`},
		{name: "trusted proxy mapped prefix", toml: "[web]\ntrusted_proxies = [\"::ffff:10.0.0.0/104\"]", want: `key "web.trusted_proxies": "::ffff:10.0.0.0/104" is IPv4 written as IPv6: write it as IPv4`},
		{name: "trusted proxies not a list", toml: "[web]\ntrusted_proxies = \"10.0.0.5\"", want: `"web.trusted_proxies"`},
		{name: "too many trusted proxies", toml: "[web]\ntrusted_proxies = [" + strings.Repeat("\"10.0.0.1\",", 65) + "]", want: `key "web.trusted_proxies": 65 entries, at most 64`},
		{name: "timeout too short", toml: "[web]\ntimeout = \"10ms\"", want: `key "web.timeout": 10ms is outside 1s..10m`},
		{name: "private data", toml: "[web]\nconfig_file = \"/etc/gpusuite/web-config.yml\"\nprivate_data = true\nadmins = [\"alice\"]\nuser_header = \"X-Remote-User\""},
		{name: "user header with a colon", toml: "[web]\nuser_header = \"X-Remote-User:\"", want: `key "web.user_header": "X-Remote-User:" is not an HTTP header name (e.g. X-Remote-User)`},
		{name: "empty admin", toml: "[web]\nadmins = [\"\"]", want: `key "web.admins": "" is not a user name`},
		{name: "admin with a space", toml: "[web]\nadmins = [\"alice \"]", want: `key "web.admins": "alice " is not a user name`},
		{name: "private data not a bool", toml: "[web]\nprivate_data = \"yes\"", want: `"web.private_data"`},
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
	if !d.Enabled || d.Listen != "" || d.MaxAge.Duration != 30*time.Second || d.Concurrent != 4 || d.Timeout.Duration != 30*time.Second || d.MaxStreams != 1000 || d.MaxStreamsPerClient != 8 || len(d.TrustedProxies) != 0 ||
		d.ConfigFile != "" || d.PrivateData || len(d.Admins) != 0 || d.UserHeader != "" {
		t.Errorf("defaults: %+v", d)
	}
}

func TestTrustedPrefixes(t *testing.T) {
	w := Web{TrustedProxies: []string{"10.0.0.5", " 10.1.2.3/16 ", "::ffff:10.0.0.7", "2001:db8::1/64"}}
	got, err := w.TrustedPrefixes()
	if err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32"), netip.MustParsePrefix("10.1.0.0/16"),
		netip.MustParsePrefix("10.0.0.7/32"), netip.MustParsePrefix("2001:db8::/64")}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("prefixes (-want +got):\n%s", diff)
	}
}
