package demo

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// Every simulated GPU library Run opens is shut down by the time Run
// returns: when a node's agent cannot start (the others are stopped) and
// when the demo ends.
func TestRunClosesGPUs(t *testing.T) {
	for _, tc := range []struct {
		name string
		// broken is the node whose agent cannot start; -1: none.
		broken  int
		wantErr string
	}{
		{"an agent that cannot start", 1, "no-such-ship-user"},
		{"ended by its context", -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := NewLive(LiveOptions{Info: Info{Cluster: "demo", Nodes: 3, GPUs: 2, Model: "h100", Seed: 1},
				LiveDir: t.TempDir(), WorkDir: t.TempDir(), Interval: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			var opened, closed atomic.Int64
			for _, n := range l.nodes {
				initf, shutf := n.srv.InitFunc, n.srv.ShutdownFunc
				n.srv.InitFunc = func() nvml.Return { opened.Add(1); return initf() }
				n.srv.ShutdownFunc = func() nvml.Return { closed.Add(1); return shutf() }
			}
			if tc.broken >= 0 {
				l.nodes[tc.broken].cfg.Agent.ShipUser = "no-such-ship-user"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			err = l.Run(ctx, cancel)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Run: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Run: %v, want an error about %s", err, tc.wantErr)
			case tc.wantErr == "" && ctx.Err() == nil:
				t.Fatal("Run returned before the demo was ready")
			}
			if opened.Load() == 0 || opened.Load() != closed.Load() {
				t.Errorf("GPU libraries: %d opened, %d shut down", opened.Load(), closed.Load())
			}
		})
	}
}
