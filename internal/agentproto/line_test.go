package agentproto

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// serve answers each connection to a fresh socket with answer (after
// reading the request line), or closes it when answer is "".
func serve(t *testing.T, answer string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			buf := make([]byte, 8192)
			n, _ := c.Read(buf)
			if answer != "" && strings.HasSuffix(string(buf[:n]), "\n") {
				c.Write([]byte(answer))
			}
			c.Close()
		}
	}()
	return p
}

func TestExchange(t *testing.T) {
	type answer struct {
		Got string `json:"got"`
	}
	for _, c := range []struct {
		name, reply string
		noSocket    bool
		want        string // "" means no error
	}{
		{name: "answered", reply: `{"got":"yes"}` + "\n"},
		{name: "no agent", noSocket: true, want: "cannot connect"},
		{name: "closed", reply: "", want: "connection closed without an answer"},
		{name: "garbage", reply: "not json\n", want: "bad answer"},
		// bounded by the larger of maxLine and the 4 KiB first buffer
		{name: "too long", reply: `{"got":"` + strings.Repeat("x", 5000) + `"}` + "\n", want: "token too long"},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(t.TempDir(), "none.sock")
			if !c.noSocket {
				p = serve(t, c.reply)
			}
			var a answer
			err := Exchange(context.Background(), p, 5*time.Second, 100, map[string]string{"op": "x"}, &a)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("error %v", err)
			case c.want == "" && a.Got != "yes":
				t.Errorf("answer %+v", a)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("error %v, want %q", err, c.want)
			}
			if c.noSocket && !errors.Is(err, ErrConnect) {
				t.Errorf("no socket: %v is not ErrConnect", err)
			}
		})
	}
}

// Send does not wait for the listener: the line is read after Send has
// returned and the connection is closed.
func TestSend(t *testing.T) {
	p := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := Send(context.Background(), p, 5*time.Second, map[string]string{"op": "announce"}); err != nil {
		t.Fatal(err)
	}
	c, err := ln.Accept() // only now: nobody read while Send ran
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var got map[string]string
	if sent, err := Read(c, 100, &got); !sent || err != nil || got["op"] != "announce" {
		t.Errorf("read %v (sent %v, err %v), want the announce line", got, sent, err)
	}
	err = Send(context.Background(), filepath.Join(t.TempDir(), "none.sock"), time.Second, map[string]string{})
	if !errors.Is(err, ErrConnect) {
		t.Errorf("no socket: %v is not ErrConnect", err)
	}
}
