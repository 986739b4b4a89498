package hookclient

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/agent/sockline"
	"github.com/aicloud/gpusuite/internal/record"
)

func TestInventoryPath(t *testing.T) {
	if got, want := InventoryPath("/var/spool/gpusuite/agent.sock"), "/var/spool/gpusuite/.agent.sock.gpus.json"; got != want {
		t.Errorf("InventoryPath = %q, want %q (hidden: the shipper leaves it)", got, want)
	}
}

// Expect takes the identities from the inventory of the agent that
// listens, and tells it the key without waiting for an answer; anything
// else is ErrInventory (or no agent), for the caller's identify.
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
		noListener bool
		minors     []int
		want       []record.GPU
		wantErr    error
		wantInErr  string
		wantSent   bool // the listener got the identify line with the key
	}{
		{name: "identities in the minors' order", inventory: mine, minors: []int{0, 2}, want: []record.GPU{gpus[1], gpus[0]}, wantSent: true},
		{name: "no inventory", minors: []int{0}, wantErr: ErrInventory, wantInErr: "no such file"},
		{name: "another process's", inventory: string(other), minors: []int{0}, wantErr: ErrInventory, wantInErr: "the socket's agent is pid"},
		{name: "a minor it lacks", inventory: mine, minors: []int{0, 5}, wantErr: ErrInventory, wantInErr: "no GPU with minor number 5"},
		{name: "garbage", inventory: "{gpus", minors: []int{0}, wantErr: ErrInventory},
		{name: "too long", inventory: `{"gpus":[],"x":"` + strings.Repeat("x", maxInventory) + `"}`, minors: []int{0}, wantErr: ErrInventory, wantInErr: "over"},
		{name: "no agent listens", inventory: mine, noListener: true, minors: []int{0}, wantErr: sockline.ErrConnect},
	} {
		t.Run(tt.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "agent.sock")
			if tt.inventory != "" {
				if err := os.WriteFile(InventoryPath(sock), []byte(tt.inventory), 0o600); err != nil {
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
			got, err := Expect(context.Background(), sock, 2*time.Second, tt.minors, "cl/42/0/n1/job_start")
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantInErr) {
					t.Fatalf("err = %v, want %v with %q", err, tt.wantErr, tt.wantInErr)
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
			// read only now: Expect did not wait for the listener
			ln.(*net.UnixListener).SetDeadline(time.Now().Add(100 * time.Millisecond))
			c, aerr := ln.Accept()
			var req Request
			sent := false
			if aerr == nil {
				defer c.Close()
				s, rerr := sockline.Read(c, MaxMessage, &req)
				sent = s && rerr == nil
			}
			if sent != tt.wantSent {
				t.Fatalf("identify sent: %v, want %v", sent, tt.wantSent)
			}
			if sent && (req.Op != OpIdentify || req.Key != "cl/42/0/n1/job_start" || !cmp.Equal(req.Minors, tt.minors) || req.Procs) {
				t.Errorf("request %+v", req)
			}
		})
	}
}
