package config

import (
	"fmt"
	"net"
	"net/netip"
	"strings"
	"time"
)

// maxTrustedProxies bounds web.trusted_proxies: a site has a few
// proxies, and each stream's address is matched against every entry.
const maxTrustedProxies = 64

// Web configures the dashboard and JSON API that gpuacct serve offers
// (docs/dashboard.md, docs/api.md).
type Web struct {
	// Enabled serves the dashboard and /api/v1/.
	Enabled bool `toml:"enabled"`
	// Listen is the dashboard's own address; empty shares the /metrics
	// listener (ingest.metrics_listen).
	Listen string `toml:"listen"`
	// MaxAge is the Cache-Control max-age of pages and API answers.
	MaxAge Duration `toml:"max_age"`
	// Concurrent is how many pages and API requests run at once; more
	// wait two seconds, then get 503 with Retry-After.
	Concurrent int `toml:"concurrent"`
	// Timeout is each page's and API request's deadline.
	Timeout Duration `toml:"timeout"`
	// MaxStreams is how many live board event streams are open at once;
	// past it a new one gets 503 (each costs a goroutine and its writes).
	MaxStreams int `toml:"max_streams"`
	// MaxStreamsPerClient is how many of them one client may hold (an
	// IPv4 address, or an IPv6 /64, which one host may fill); 0: no
	// bound. Behind a reverse proxy every viewer is the proxy unless it
	// is in TrustedProxies.
	MaxStreamsPerClient int `toml:"max_streams_per_client"`
	// TrustedProxies are the reverse proxies (addresses or CIDR
	// prefixes) whose X-Forwarded-For names the client; it is believed
	// from no one else.
	TrustedProxies []string `toml:"trusted_proxies"`
	// ConfigFile is a Prometheus web configuration file (the exporter
	// toolkit's web-config.yml: tls_server_config, basic_auth_users,
	// http_server_config) for every address serve listens on; empty
	// serves plain HTTP without login.
	ConfigFile string `toml:"config_file"`
	// PrivateData hides other users' names from everyone but Admins,
	// as Slurm's PrivateData=users does; every dynamic answer then
	// needs an identity (basic auth or UserHeader), else 401.
	PrivateData bool `toml:"private_data"`
	// Admins see every user's name when PrivateData is on.
	Admins []string `toml:"admins"`
	// UserHeader is the request header a reverse proxy names the
	// logged-in user in (e.g. X-Remote-User); empty: none is believed.
	// With TrustedProxies set it is believed only from them.
	UserHeader string `toml:"user_header"`
	// Forms lets logged-in users book and free GPUs from the board, and
	// admins and account coordinators ignore jobs from their pages, as
	// requests to the ledger's writer (report.requests); off: the
	// dashboard only reads.
	Forms bool `toml:"forms"`
}

func defaultWeb() Web {
	return Web{Enabled: true, MaxAge: Dur(30 * time.Second), Concurrent: 4, Timeout: Dur(30 * time.Second), MaxStreams: 1000, MaxStreamsPerClient: 8}
}

func (w *Web) validate() error {
	if w.Listen != "" {
		if _, _, err := net.SplitHostPort(w.Listen); err != nil {
			return fmt.Errorf("key \"web.listen\": %q is not host:port: %w", w.Listen, err)
		}
	}
	if w.MaxAge.Duration < 0 || w.MaxAge.Duration > 24*time.Hour {
		return fmt.Errorf("key \"web.max_age\": %s is outside 0s..24h", w.MaxAge.Duration)
	}
	if w.Concurrent < 1 || w.Concurrent > 64 {
		return fmt.Errorf("key \"web.concurrent\": %d is outside 1..64", w.Concurrent)
	}
	if w.Timeout.Duration < time.Second || w.Timeout.Duration > 10*time.Minute {
		return fmt.Errorf("key \"web.timeout\": %s is outside 1s..10m", w.Timeout.Duration)
	}
	if w.MaxStreams < 1 || w.MaxStreams > 100000 {
		return fmt.Errorf("key \"web.max_streams\": %d is outside 1..100000", w.MaxStreams)
	}
	if w.MaxStreamsPerClient < 0 || w.MaxStreamsPerClient > 100000 {
		return fmt.Errorf("key \"web.max_streams_per_client\": %d is outside 0..100000 (0: no bound)", w.MaxStreamsPerClient)
	}
	if _, err := w.TrustedPrefixes(); err != nil {
		return err
	}
	if h := w.UserHeader; h != "" && !validHeaderName(h) {
		return fmt.Errorf("key \"web.user_header\": %q is not an HTTP header name (e.g. X-Remote-User)", h)
	}
	if len(w.Admins) > maxAdmins {
		return fmt.Errorf("key \"web.admins\": %d names, at most %d", len(w.Admins), maxAdmins)
	}
	for _, a := range w.Admins {
		if a == "" || strings.TrimSpace(a) != a {
			return fmt.Errorf("key \"web.admins\": %q is not a user name (no spaces around it, not empty)", a)
		}
	}
	return nil
}

// maxAdmins bounds web.admins: each request's identity is looked up in it.
const maxAdmins = 1000

// validHeaderName is RFC 9110's token: letters, digits and !#$%&'*+-.^_`|~.
func validHeaderName(s string) bool {
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9':
		case strings.ContainsRune("!#$%&'*+-.^_`|~", r):
		default:
			return false
		}
	}
	return s != ""
}

// TrustedPrefixes is web.trusted_proxies parsed: an address is the
// prefix of it alone.
func (w *Web) TrustedPrefixes() ([]netip.Prefix, error) {
	if len(w.TrustedProxies) > maxTrustedProxies {
		return nil, fmt.Errorf("key \"web.trusted_proxies\": %d entries, at most %d (name networks, e.g. 10.0.0.0/24)", len(w.TrustedProxies), maxTrustedProxies)
	}
	out := make([]netip.Prefix, 0, len(w.TrustedProxies))
	for _, s := range w.TrustedProxies {
		p, err := trustedPrefix(strings.TrimSpace(s))
		if err != nil {
			return nil, fmt.Errorf("key \"web.trusted_proxies\": %q %s", s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

func trustedPrefix(s string) (netip.Prefix, error) {
	const want = "is not an address or CIDR prefix (e.g. 10.0.0.5, 10.0.0.0/24, fd00::/64)"
	var p netip.Prefix
	if strings.Contains(s, "/") {
		var err error
		if p, err = netip.ParsePrefix(s); err != nil {
			return p, fmt.Errorf("%s", want)
		}
	} else {
		a, err := netip.ParseAddr(s)
		if err != nil {
			return p, fmt.Errorf("%s", want)
		}
		if a.Zone() != "" {
			return p, fmt.Errorf("has a zone: write the address without %%%s", a.Zone())
		}
		a = a.Unmap()
		p = netip.PrefixFrom(a, a.BitLen())
	}
	if p.Addr().Is4In6() {
		// Clients are matched unmapped: a mapped prefix would match none.
		return p, fmt.Errorf("is IPv4 written as IPv6: write it as IPv4")
	}
	return p.Masked(), nil
}
