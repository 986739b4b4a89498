package loopback

import (
	"net"
	"testing"
)

// TestAddr: the address is on the loopback interface and free, so a
// server can listen on it.
func TestAddr(t *testing.T) {
	addr := Addr(t)
	host, _, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" {
		t.Fatalf("Addr = %q (%v), want 127.0.0.1:PORT", addr, err)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("listen on %s: %v", addr, err)
	}
	ln.Close()
}
