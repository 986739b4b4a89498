package web

import (
	"net/http"
	"net/netip"
	"strings"
	"testing"
)

func TestClientKey(t *testing.T) {
	proxies := []netip.Prefix{netip.MustParsePrefix("10.0.0.5/32"), netip.MustParsePrefix("192.168.0.0/16"), netip.MustParsePrefix("fd00::/64")}
	for _, tc := range []struct {
		name    string
		remote  string
		xff     []string
		trusted []netip.Prefix
		want    string
	}{
		{name: "IPv4 peer", remote: "203.0.113.7:4711", want: "203.0.113.7"},
		{name: "IPv6 peer by its /64", remote: "[2001:db8:1:2:aaaa::1]:4711", want: "2001:db8:1:2::/64"},
		{name: "another address of the same /64", remote: "[2001:db8:1:2:ffff:ffff:ffff:ffff]:80", want: "2001:db8:1:2::/64"},
		{name: "zoned IPv6 peer", remote: "[fe80::1%eth0]:80", want: "fe80::/64"},
		{name: "IPv4 in IPv6", remote: "[::ffff:203.0.113.7]:4711", want: "203.0.113.7"},
		{name: "not an IP peer", remote: "@", want: "@"},
		{name: "forwarded by no trusted proxy", remote: "203.0.113.7:1", xff: []string{"198.51.100.1"}, trusted: proxies, want: "203.0.113.7"},
		{name: "forwarded, no proxies trusted", remote: "10.0.0.5:1", xff: []string{"198.51.100.1"}, want: "10.0.0.5"},
		{name: "trusted proxy", remote: "10.0.0.5:1", xff: []string{"198.51.100.1"}, trusted: proxies, want: "198.51.100.1"},
		{name: "trusted proxy without the header", remote: "10.0.0.5:1", trusted: proxies, want: "10.0.0.5"},
		{name: "client's own entries ignored", remote: "10.0.0.5:1", xff: []string{"1.2.3.4, 198.51.100.1"}, trusted: proxies, want: "198.51.100.1"},
		{name: "chain of trusted proxies", remote: "10.0.0.5:1", xff: []string{"1.2.3.4, 198.51.100.1, 192.168.3.3"}, trusted: proxies, want: "198.51.100.1"},
		{name: "several header lines", remote: "10.0.0.5:1", xff: []string{"1.2.3.4", "198.51.100.1 , 192.168.3.3", ""}, trusted: proxies, want: "198.51.100.1"},
		{name: "all trusted", remote: "10.0.0.5:1", xff: []string{"192.168.1.1, 192.168.3.3"}, trusted: proxies, want: "192.168.1.1"},
		{name: "IPv6 client behind a proxy", remote: "10.0.0.5:1", xff: []string{"2001:db8:9::42"}, trusted: proxies, want: "2001:db8:9::/64"},
		{name: "IPv6 proxy", remote: "[fd00::3]:1", xff: []string{"198.51.100.1"}, trusted: proxies, want: "198.51.100.1"},
		{name: "entry with a port", remote: "10.0.0.5:1", xff: []string{"198.51.100.1:5555"}, trusted: proxies, want: "198.51.100.1"},
		{name: "IPv6 entry with a port", remote: "10.0.0.5:1", xff: []string{"[2001:db8:9::42]:5555"}, trusted: proxies, want: "2001:db8:9::/64"},
		{name: "garbage entry stops at its proxy", remote: "10.0.0.5:1", xff: []string{"198.51.100.1, unknown, 192.168.3.3"}, trusted: proxies, want: "192.168.3.3"},
		{name: "empty entries skipped", remote: "10.0.0.5:1", xff: []string{"198.51.100.1,, "}, trusted: proxies, want: "198.51.100.1"},
		{name: "hops bounded", remote: "10.0.0.5:1", xff: []string{"198.51.100.1," + strings.Repeat("192.168.3.3,", maxForwardHops) + "192.168.9.9"}, trusted: proxies, want: "192.168.3.3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &http.Request{RemoteAddr: tc.remote, Header: http.Header{}}
			for _, v := range tc.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := clientKey(r, tc.trusted); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}
