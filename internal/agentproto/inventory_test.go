package agentproto

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

func TestInventoryPath(t *testing.T) {
	if got, want := InventoryPath("/var/spool/gpusuite/agent.sock"), "/var/spool/gpusuite/.agent.sock.gpus.json"; got != want {
		t.Errorf("InventoryPath = %q, want %q (hidden: the shipper leaves it)", got, want)
	}
}

// Expect takes the identities from the inventory of the agent that
// listens, tells it the key without waiting for an answer, and sends the
// event's announce on the same connection; anything else is ErrInventory
// (or no agent), for the caller's identify.
func TestExpect(t *testing.T) {
	idx := func(i int) *int { return &i }
	gpus := []record.GPU{
		{Minor: 2, Index: idx(0), UUID: "GPU-a", Model: "H100"},
		{Minor: 0, Index: idx(1), UUID: "GPU-b", Model: "H100"},
	}
	mine := func() string {
		data, _ := json.Marshal(Inventory{PID: os.Getpid(), GPUs: gpus})
		return string(data)
	}()
	other, _ := json.Marshal(Inventory{PID: os.Getpid() + 1, GPUs: gpus})
	for _, tt := range []struct {
		name       string
		inventory  string // "" means no file
		fifo       bool   // a named pipe where the file should be
		mode       os.FileMode
		age        time.Duration // of the file's mtime
		noListener bool
		minors     []int
		want       []record.GPU
		wantErr    error
		wantInErr  string
		wantSent   bool // the listener got the identify line with the key, then the announce
	}{
		{name: "identities in the minors' order", inventory: mine, minors: []int{0, 2}, want: []record.GPU{gpus[1], gpus[0]}, wantSent: true},
		{name: "no inventory", minors: []int{0}, wantErr: ErrInventory, wantInErr: "no such file"},
		{name: "another process's", inventory: string(other), minors: []int{0}, wantErr: ErrInventory, wantInErr: "the socket's agent is pid"},
		{name: "a minor it lacks", inventory: mine, minors: []int{0, 5}, wantErr: ErrInventory, wantInErr: "no GPU with minor number 5"},
		{name: "garbage", inventory: "{gpus", minors: []int{0}, wantErr: ErrInventory},
		{name: "too long", inventory: `{"gpus":[],"x":"` + strings.Repeat("x", maxInventory) + `"}`, minors: []int{0}, wantErr: ErrInventory, wantInErr: "over"},
		{name: "not marked by the agent's loop", inventory: mine, age: 2 * time.Minute, minors: []int{0}, wantErr: ErrInventory, wantInErr: "loop is not running"},
		{name: "writable by others", inventory: mine, mode: 0o622, minors: []int{0}, wantErr: ErrInventory, wantInErr: "not the agent's alone"},
		{name: "a named pipe", fifo: true, minors: []int{0}, wantErr: ErrInventory, wantInErr: "not a regular file"},
		{name: "no agent listens", inventory: mine, noListener: true, minors: []int{0}, wantErr: ErrConnect},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "agent.sock")
			p := InventoryPath(sock)
			if tt.inventory != "" {
				if err := os.WriteFile(p, []byte(tt.inventory), 0o600); err != nil {
					t.Fatal(err)
				}
				if tt.mode != 0 {
					os.Chmod(p, tt.mode)
				}
				if tt.age != 0 {
					at := time.Now().Add(-tt.age)
					os.Chtimes(p, at, at)
				}
			}
			if tt.fifo {
				if err := syscall.Mkfifo(p, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			var ln net.Listener
			if !tt.noListener {
				var err error
				if ln, err = net.Listen("unix", sock); err != nil {
					t.Fatal(err)
				}
				defer ln.Close()
			}
			got, e, err := Expect(context.Background(), sock, 2*time.Second, time.Minute, tt.minors, "cl/42/0/n1/job_start")
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantInErr) || e != nil {
					t.Fatalf("err = %v (connection kept: %v), want %v with %q", err, e != nil, tt.wantErr, tt.wantInErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("GPUs (-want +got):\n%s", d)
			}
			if ln == nil {
				return
			}
			if e != nil {
				// the announce follows before anything is read: nothing waited
				if err := e.Announce(&record.Event{Schema: record.EventSchema, Key: "cl/42/0/n1/job_start"}); err != nil {
					t.Fatal(err)
				}
				e.Close() // the holder closes it

			}
			ln.(*net.UnixListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
			c, aerr := ln.Accept()
			var reqs []Request
			if aerr == nil {
				defer c.Close()
				lines := NewLines(c, MaxMessage)
				for {
					var req Request
					if sent, rerr := lines.Next(&req); !sent || rerr != nil {
						break
					}
					reqs = append(reqs, req)
				}
			}
			if !tt.wantSent {
				if len(reqs) != 0 {
					t.Errorf("requests sent: %+v, want none", reqs)
				}
				return
			}
			if len(reqs) != 2 || reqs[0].Op != OpIdentify || reqs[0].Key != "cl/42/0/n1/job_start" || !cmp.Equal(reqs[0].Minors, tt.minors) || reqs[0].Procs ||
				reqs[1].Op != OpAnnounce || reqs[1].Event == nil || reqs[1].Event.Key != "cl/42/0/n1/job_start" {
				t.Errorf("requests %+v, want the keyed identify, then the announce", reqs)
			}
		})
	}
}
