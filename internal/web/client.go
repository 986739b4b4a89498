package web

import (
	"net/http"
	"net/netip"
	"strings"
)

// maxForwardHops bounds the X-Forwarded-For entries looked at: past this
// many trusted proxies in a row the last of them is taken for the client.
const maxForwardHops = 16

// clientKey is what a board stream is counted against: the client's
// IPv4 address, or its IPv6 /64, since one host may hold every address
// of its /64. The peer is the client unless it is a trusted proxy; then
// X-Forwarded-For is read from its right end, where each proxy appends
// its peer, past the trusted proxies' entries: the first other address
// is the client's. Entries further left are the client's own to write.
func clientKey(r *http.Request, trusted []netip.Prefix) string {
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr // not an IP peer: counted as it is named
	}
	a := ap.Addr().Unmap()
	if isTrusted(a, trusted) {
		a = forwardedClient(a, r.Header.Values("X-Forwarded-For"), trusted)
	}
	if a.Is4() {
		return a.String()
	}
	p, err := a.WithZone("").Prefix(64)
	if err != nil {
		return a.String() // cannot happen for IPv6
	}
	return p.String()
}

// forwardedClient is the client behind the trusted proxy peer, by the
// X-Forwarded-For lines values; an entry that is no address stops the
// walk at the proxy that wrote it.
func forwardedClient(peer netip.Addr, values []string, trusted []netip.Prefix) netip.Addr {
	a, hops := peer, 0
	for i := len(values) - 1; i >= 0; i-- {
		v := values[i]
		for v != "" {
			if hops++; hops > maxForwardHops {
				return a
			}
			entry := v
			if j := strings.LastIndexByte(v, ','); j >= 0 {
				entry, v = v[j+1:], v[:j]
			} else {
				v = ""
			}
			entry = strings.TrimSpace(entry)
			if entry == "" {
				continue
			}
			next, ok := parseForwarded(entry)
			if !ok {
				return a
			}
			if !isTrusted(next, trusted) {
				return next
			}
			a = next
		}
	}
	return a
}

// parseForwarded reads one X-Forwarded-For entry: an address, or one
// with a port as some proxies write it (10.0.0.5:4711, [fd00::1]:4711).
func parseForwarded(s string) (netip.Addr, bool) {
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap(), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap(), true
	}
	return netip.Addr{}, false
}

func isTrusted(a netip.Addr, trusted []netip.Prefix) bool {
	a = a.WithZone("")
	for _, p := range trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}
