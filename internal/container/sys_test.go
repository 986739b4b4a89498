package container

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aicloud/gpusuite/internal/testkit/pty"
)

// TestReadSecretNotTerminal: a key piped or redirected in is read up to
// the end of its line, without touching any terminal setting.
func TestReadSecretNotTerminal(t *testing.T) {
	for _, tc := range []struct {
		name, input, want string
		wantErr           bool
	}{
		{name: "line", input: "KEY\nrest\n", want: "KEY"},
		{name: "no newline", input: "  KEY ", want: "KEY"},
		{name: "empty", input: "", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "stdin")
			if err := os.WriteFile(path, []byte(tc.input), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var stderr bytes.Buffer
			sys := OSSys(f, &bytes.Buffer{}, &stderr, os.Getenv, nil)
			if sys.StdinIsTerminal() {
				t.Errorf("StdinIsTerminal = true for a file")
			}
			got, err := sys.ReadSecret("key: ")
			if (err != nil) != tc.wantErr {
				t.Fatalf("ReadSecret error = %v, want error %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("ReadSecret = %q, want %q", got, tc.want)
			}
			if stderr.String() != "key: " {
				t.Errorf("stderr = %q, want the prompt alone", stderr.String())
			}
		})
	}
}

// TestReadSecretTerminal: on a terminal the key is not echoed while it is
// typed, and echo is back on afterwards.
func TestReadSecretTerminal(t *testing.T) {
	master, slave := pty.Open(t)
	var stderr bytes.Buffer
	sys := OSSys(slave, &bytes.Buffer{}, &stderr, os.Getenv, nil)
	if !sys.StdinIsTerminal() {
		t.Fatalf("StdinIsTerminal = false for a terminal")
	}
	sfd := int(slave.Fd())
	echo := func() bool {
		st, err := unix.IoctlGetTermios(sfd, unix.TCGETS)
		if err != nil {
			t.Fatalf("terminal settings: %v", err)
		}
		return st.Lflag&unix.ECHO != 0
	}
	if !echo() {
		t.Fatalf("a new terminal echoes; this one does not")
	}
	type result struct {
		key string
		err error
	}
	done := make(chan result, 1)
	go func() {
		key, err := sys.ReadSecret("key: ")
		done <- result{key, err}
	}()
	// Type only once echo is off, as a person would after the prompt.
	for end := time.Now().Add(60 * time.Second); echo(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("echo still on 60s after ReadSecret started")
		}
	}
	if _, err := master.Write([]byte("s3cret\n")); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-done:
	case <-time.After(60 * time.Second):
		t.Fatalf("ReadSecret not done 60s after the key was typed")
	}
	if r.err != nil || r.key != "s3cret" {
		t.Fatalf("ReadSecret = %q, %v; want %q", r.key, r.err, "s3cret")
	}
	if !echo() {
		t.Errorf("echo not restored after ReadSecret")
	}
	// Echo happens as the key is written, so anything echoed is there now.
	mfd := int(master.Fd())
	if err := unix.SetNonblock(mfd, true); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 256)
	if n, _ := unix.Read(mfd, buf); n > 0 && bytes.Contains(buf[:n], []byte("s3cret")) {
		t.Errorf("terminal echoed the key: %q", buf[:n])
	}
	if stderr.String() != "key: \n" {
		t.Errorf("stderr = %q, want the prompt and a newline", stderr.String())
	}
}
