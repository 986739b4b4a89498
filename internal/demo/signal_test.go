package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary run `gpuacct demo` itself when asked, so a
// test can signal a real demo process.
func TestMain(m *testing.M) {
	if os.Getenv("GPUSUITE_DEMO_CHILD") == "1" {
		// Twenty weeks take far longer than the signal needs to arrive.
		o := Defaults()
		o.Weeks, o.Nodes = 20, 4
		o.WorkRoot = os.Getenv("GPUSUITE_DEMO_SHM")
		if err := Run(context.Background(), os.Stdout, o); err != nil {
			fmt.Fprintf(os.Stderr, "gpuacct: %v\n", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// A demo stopped with SIGTERM or SIGINT removes its in-memory cluster
// directory and its unfinished work directory before it exits.
func TestSignalRemovesDirectories(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT} {
		t.Run(sig.String(), func(t *testing.T) {
			shm, tmp := t.TempDir(), t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), "GPUSUITE_DEMO_CHILD=1", "GPUSUITE_DEMO_SHM="+shm, "TMPDIR="+tmp)
			var stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &bytes.Buffer{}, &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			deadline := time.Now().Add(60 * time.Second)
			for {
				ents, err := os.ReadDir(shm)
				if err != nil {
					t.Fatal(err)
				}
				if len(ents) > 0 {
					break
				}
				select {
				case err := <-done:
					t.Fatalf("demo exited (%v) before making its directory: %s", err, stderr.String())
				case <-time.After(10 * time.Millisecond):
				}
				if time.Now().After(deadline) {
					cmd.Process.Kill()
					t.Fatal("the demo made no directory in 60s")
				}
			}
			if err := cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			signalled := time.Now()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("demo exited 0 after %s", sig)
				}
				t.Logf("exited %s after %s", time.Since(signalled).Round(time.Millisecond), sig)
			case <-time.After(60 * time.Second):
				cmd.Process.Kill()
				<-done
				t.Fatalf("demo still running 60s after %s", sig)
			}
			if !strings.Contains(stderr.String(), "demo interrupted") {
				t.Errorf("stderr %q does not say it was interrupted", stderr.String())
			}
			for _, d := range []string{shm, tmp} {
				left, _ := filepath.Glob(filepath.Join(d, "*"))
				if len(left) > 0 {
					t.Errorf("left behind after %s: %v", sig, left)
				}
			}
		})
	}
}
