package gpu

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/sim"
)

// A backend is opened only when a build registered it: this test binary
// does not import internal/sim/simulated, like the production hooks.
func TestOpenBackends(t *testing.T) {
	var gotNode string
	RegisterBackend("fake", func(cfg config.GPU, node string) (nvml.Interface, error) {
		gotNode = node
		return sim.New(sim.Options{Node: node, Count: cfg.Simulated.Count, Model: "h100"})
	})
	t.Cleanup(func() { delete(backends, "fake") })
	tests := []struct {
		name, backend, wantErr string
		wantDevices            int
	}{
		{name: "registered", backend: "fake", wantDevices: 2},
		{name: "simulated not built in", backend: "simulated", wantErr: `gpu backend "simulated" is not built into this program`},
		{name: "unknown", backend: "bogus", wantErr: `gpu backend "bogus" is not built into this program`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.GPU{Backend: tt.backend, Simulated: config.Simulated{Count: 2}}
			lib, err := Open(context.Background(), cfg, "gpu07", time.Second)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer lib.Close()
			n, ret := lib.DeviceGetCount()
			if ret != nvml.SUCCESS || n != tt.wantDevices || gotNode != "gpu07" {
				t.Errorf("devices %d (%v) on node %q, want %d on gpu07", n, ret, gotNode, tt.wantDevices)
			}
		})
	}
}
