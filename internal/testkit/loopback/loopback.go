// Package loopback gives a test's server an address on the loopback
// interface that no one listens on, for a daemon that takes its listen
// address as a flag or a config key rather than a listener.
package loopback

import (
	"net"
	"testing"
)

// Addr is 127.0.0.1 and a port that was free a moment ago; the server
// under test binds it soon after, a race another process rarely wins.
func Addr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
