package gpu

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/sim"
)

// A slice the hooks mapped to (parent, GPU instance, compute instance) is
// given its MIG UUID on the simulated A100 7×1g.10gb and H100 mix; a slice
// that does not exist is noted, and a whole GPU is left alone.
func TestMIGUUIDs(t *testing.T) {
	s, err := sim.New(sim.Options{Node: "n1", Count: 2, Model: "a100"})
	if err != nil {
		t.Fatal(err)
	}
	a100 := s.Device(0).EnableMIGLayout(sim.LayoutA100x7)
	h, err := sim.New(sim.Options{Node: "n2", Count: 1, Model: "h100"})
	if err != nil {
		t.Fatal(err)
	}
	h100 := h.Device(0).EnableMIGLayout(sim.LayoutH100Mix)
	ip := func(v int) *int { return &v }
	for _, tt := range []struct {
		name string
		srv  *sim.Server
		in   Identity
		want Identity
	}{
		{"A100 fifth 1g.10gb", s,
			Identity{Parent: sim.UUID("n1", 0), GI: ip(5), CI: ip(0)},
			Identity{Parent: sim.UUID("n1", 0), GI: ip(5), CI: ip(0), UUID: a100[4].UUID()}},
		{"H100 3g.40gb", h,
			Identity{Parent: sim.UUID("n2", 0), GI: ip(1), CI: ip(0)},
			Identity{Parent: sim.UUID("n2", 0), GI: ip(1), CI: ip(0), UUID: h100[0].UUID()}},
		{"H100 2g.20gb", h,
			Identity{Parent: sim.UUID("n2", 0), GI: ip(2), CI: ip(0)},
			Identity{Parent: sim.UUID("n2", 0), GI: ip(2), CI: ip(0), UUID: h100[1].UUID()}},
		{"no such instance", h,
			Identity{Parent: sim.UUID("n2", 0), GI: ip(9), CI: ip(0)},
			Identity{Parent: sim.UUID("n2", 0), GI: ip(9), CI: ip(0), Missing: []string{"uuid: no MIG instance gi9/ci0 on " + sim.UUID("n2", 0)}}},
		{"whole GPU", s,
			Identity{UUID: sim.UUID("n1", 1)},
			Identity{UUID: sim.UUID("n1", 1)}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lib, err := OpenInterface(context.Background(), tt.srv, time.Second)
			if err != nil {
				t.Fatal(err)
			}
			ids := []Identity{tt.in}
			lib.MIGUUIDs(context.Background(), ids)
			if d := cmp.Diff(tt.want, ids[0]); d != "" {
				t.Error(d)
			}
		})
	}
	if got := h100[0].UUID(); got == a100[0].UUID() || got[:4] != "MIG-" {
		t.Errorf("H100 instance UUID %q", got)
	}
}
