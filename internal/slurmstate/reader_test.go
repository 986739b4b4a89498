package slurmstate

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeScontrol answers the two commands Read runs from fixtures.
func fakeScontrol(t *testing.T, nodes, res string) func(context.Context, string, ...string) ([]byte, error) {
	return func(_ context.Context, name string, args ...string) ([]byte, error) {
		switch strings.Join(append([]string{name}, args...), " ") {
		case "scontrol show node --oneliner":
			return fixture(t, nodes), nil
		case "scontrol show reservation --oneliner":
			return fixture(t, res), nil
		}
		return nil, errors.New("unexpected command " + name + " " + strings.Join(args, " "))
	}
}

func TestReaderJoins(t *testing.T) {
	now := time.Date(2026, 11, 26, 9, 0, 0, 0, time.UTC)
	r := Reader{Run: fakeScontrol(t, "nodes-22.05.txt", "reservations-22.05.txt"), Location: zone,
		Now: func() time.Time { return now }}
	got, err := r.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	nodes, _ := ParseNodes(fixture(t, "nodes-22.05.txt"), zone)
	res, _ := ParseReservations(fixture(t, "reservations-22.05.txt"), zone)
	if d := cmp.Diff(State{Nodes: nodes, Reservations: res, At: now}, got); d != "" {
		t.Errorf("Read (-want +got):\n%s", d)
	}
}

// TestReaderUnreachable: scontrol's complaint reaches the caller.
func TestReaderUnreachable(t *testing.T) {
	r := Reader{Run: func(context.Context, string, ...string) ([]byte, error) {
		return nil, errors.New("scontrol show node --oneliner: slurm_load_node error: Unable to contact slurm controller (connect failure): exit status 1")
	}}
	_, err := r.Read(context.Background())
	if err == nil || !strings.Contains(err.Error(), "read slurm nodes: ") || !strings.Contains(err.Error(), "Unable to contact slurm controller") {
		t.Fatalf("error %v, want the nodes read failing with scontrol's words", err)
	}
}

// TestReaderHungRun: a Run that ignores its context costs the caller
// the timeout, not forever.
func TestReaderHungRun(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	r := Reader{Timeout: 100 * time.Millisecond, Run: func(context.Context, string, ...string) ([]byte, error) {
		<-release
		return nil, nil
	}}
	done := make(chan error, 1)
	go func() { _, err := r.Read(context.Background()); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer in time") {
			t.Fatalf("error %v, want the deadline", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Read did not return 30 s after its 100 ms timeout")
	}
}

func TestReaderTooMuchOutput(t *testing.T) {
	r := Reader{Run: func(context.Context, string, ...string) ([]byte, error) {
		return make([]byte, MaxOutput+1), nil
	}}
	_, err := r.Read(context.Background())
	if err == nil || !strings.Contains(err.Error(), "printed more than 16777216 bytes") {
		t.Fatalf("error %v, want the output bound", err)
	}
}

// script writes an executable shell script named name into dir.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestReaderExec: the real process path, with a stand-in scontrol
// found through the environment's PATH.
func TestReaderExec(t *testing.T) {
	dir := t.TempDir()
	abs, err := filepath.Abs("testdata")
	if err != nil {
		t.Fatal(err)
	}
	script(t, dir, "scontrol", `case "$2" in
node) cat `+abs+`/nodes-22.05.txt ;;
reservation) cat `+abs+`/reservations-none.txt ;;
*) echo "scontrol: unexpected $*" >&2; exit 1 ;;
esac`)
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	got, err := Reader{Run: Exec{}.Run, Location: zone}.Read(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Nodes) != 9 || got.Nodes[3].Reason != "GPU 5 xid=79 fell off the bus" || got.Reservations == nil || len(got.Reservations) != 0 {
		t.Errorf("got %d nodes (fourth's reason %q) and reservations %#v; want 9, the xid reason, none", len(got.Nodes), got.Nodes[3].Reason, got.Reservations)
	}
}

func TestExec(t *testing.T) {
	dir := t.TempDir()
	cases := []struct {
		name, body string
		exec       Exec
		timeout    time.Duration
		want       string // in the error; empty for success
		out        string
	}{
		{name: "stdout", body: `echo "conf=$SLURM_CONF"`, exec: Exec{Env: []string{"SLURM_CONF=/etc/x.conf"}}, out: "conf=/etc/x.conf\n"},
		{name: "unreachable", body: `echo "slurm_load_node error: Unable to contact slurm controller (connect failure)" >&2; exit 1`,
			want: "slurm_load_node error: Unable to contact slurm controller (connect failure): exit status 1"},
		{name: "too much", body: `head -c 5000 /dev/zero`, exec: Exec{MaxOutput: 1000}, want: "printed more than 1000 bytes"},
		{name: "hung", body: `exec sleep 60`, timeout: 200 * time.Millisecond, want: "no answer in time: context deadline exceeded"},
		// A child keeping stdout open after the command is killed.
		{name: "hung child", body: `sleep 20 & wait`, timeout: 200 * time.Millisecond, want: "no answer in time: context deadline exceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := script(t, dir, strings.ReplaceAll(c.name, " ", "-"), c.body)
			ctx := context.Background()
			if c.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, c.timeout)
				defer cancel()
			}
			start := time.Now()
			out, err := c.exec.Run(ctx, p)
			if took := time.Since(start); took > 30*time.Second {
				t.Errorf("Run took %s", took)
			}
			if c.want == "" {
				if err != nil || string(out) != c.out {
					t.Fatalf("got %q, %v; want %q", out, err, c.out)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// A failed command's line stays short: a long list is cut and counted.
func TestCommandLine(t *testing.T) {
	ids := make([]string, 500)
	for i := range ids {
		ids[i] = strconv.Itoa(100100 + 100*i)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"scontrol", []string{"show", "node", "--oneliner"}, "scontrol show node --oneliner"},
		{"sacct", nil, "sacct"},
		{"sacct", []string{"-M", "c1", "-j", strings.Join(ids, ","), "-X"},
			"sacct -M c1 -j 100100,100200,100300,100400,100500,100600,100700,100800,… (500 items, 3499 bytes) -X"},
		{"x", []string{strings.Repeat("a", 70)}, "x " + strings.Repeat("a", 60) + "… (70 bytes)"},
	} {
		if got := CommandLine(c.name, c.args); got != c.want {
			t.Errorf("CommandLine(%q, %q):\n got %q\nwant %q", c.name, c.args, got, c.want)
		}
	}
}
