package hookgpus

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/sim"
)

// simOpen opens a simulated node of four GPUs whose minors are permuted
// (minor 0 is NVML index 2), minor 0 running pid 100.
func simOpen(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
	s, err := sim.New(sim.Options{Node: req.Node, Count: 4, Model: "h100", Minors: []int{2, 3, 0, 1}})
	if err != nil {
		return nil, err
	}
	s.Device(2).SetWorkload(func(time.Time) sim.Load {
		return sim.Load{GPUUtil: 50, Procs: []nvml.ProcessInfo{{Pid: 100, UsedGpuMemory: 3 << 20}}}
	})
	return gpu.OpenInterface(ctx, s, req.Timeout.Duration)
}

func TestServe(t *testing.T) {
	noDriver := func(context.Context, agentproto.Direct) (*gpu.Library, error) {
		return nil, errors.New("open NVML: nvmlInit: ERROR_LIBRARY_NOT_FOUND")
	}
	for _, tt := range []struct {
		name    string
		in      string
		open    Open
		want    func(t *testing.T, r agentproto.Response)
		wantErr string
	}{
		{name: "identities and energy by minor", in: `{"node":"gpu01","nvml_timeout":"1s","minors":[0,3]}`, open: simOpen,
			want: func(t *testing.T, r agentproto.Response) {
				if len(r.GPUs) != 2 || r.GPUs[0].UUID != sim.UUID("gpu01", 2) || r.GPUs[1].UUID != sim.UUID("gpu01", 1) ||
					r.GPUs[0].EnergyMJ == nil || *r.GPUs[0].Index != 2 || r.Error != "" || r.Procs != nil {
					t.Errorf("answer %+v", r)
				}
			}},
		{name: "processes for the health check", in: `{"node":"gpu01","nvml_timeout":"1s","minors":[0,1],"procs":true}`, open: simOpen,
			want: func(t *testing.T, r agentproto.Response) {
				want := map[string][]agentproto.Proc{sim.UUID("gpu01", 2): {{PID: 100, MemUsedMiB: 3}}, sim.UUID("gpu01", 3): {}}
				if d := cmp.Diff(want, r.Procs); d != "" {
					t.Errorf("processes (-want +got):\n%s", d)
				}
			}},
		{name: "a minor the node lacks", in: `{"node":"gpu01","nvml_timeout":"1s","minors":[7]}`, open: simOpen,
			want: func(t *testing.T, r agentproto.Response) {
				if len(r.GPUs) != 1 || r.GPUs[0].UUID != "" || !strings.Contains(strings.Join(r.GPUs[0].Missing, ";"), "no GPU with minor number 7") {
					t.Errorf("answer %+v", r)
				}
			}},
		{name: "no driver is an answer", in: `{"minors":[0]}`, open: noDriver,
			want: func(t *testing.T, r agentproto.Response) {
				if r.Error != "open NVML: nvmlInit: ERROR_LIBRARY_NOT_FOUND" || len(r.GPUs) != 0 {
					t.Errorf("answer %+v", r)
				}
			}},
		{name: "garbage", in: `{"minors":`, open: simOpen, wantErr: "read request: unexpected end of JSON input"},
		{name: "too long", in: `{"node":"` + strings.Repeat("x", agentproto.MaxMessage) + `"}`, open: simOpen, wantErr: "longer than"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := Serve(context.Background(), strings.NewReader(tt.in), &out, tt.open)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || out.Len() > 0 {
					t.Fatalf("err = %v, output %q; want %q and no output", err, out.String(), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasSuffix(out.Bytes(), []byte("\n")) || bytes.Count(out.Bytes(), []byte("\n")) != 1 {
				t.Errorf("answer is not one line: %q", out.String())
			}
			var r agentproto.Response
			if err := json.Unmarshal(out.Bytes(), &r); err != nil {
				t.Fatal(err)
			}
			tt.want(t, r)
		})
	}
}

// The simulations' in-process way gives the same answer as the helper.
func TestAskerAnswersAsServe(t *testing.T) {
	req := agentproto.Direct{Node: "gpu02", Minors: []int{1, 0}, Procs: true}
	req.Timeout.Duration = time.Second
	got, err := Asker(simOpen)(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	in, _ := json.Marshal(req)
	var out bytes.Buffer
	if err := Serve(context.Background(), bytes.NewReader(in), &out, simOpen); err != nil {
		t.Fatal(err)
	}
	var want agentproto.Response
	if err := json.Unmarshal(out.Bytes(), &want); err != nil {
		t.Fatal(err)
	}
	// energy counters move between the two opens
	for _, r := range []*agentproto.Response{&got, &want} {
		for i := range r.GPUs {
			if r.GPUs[i].EnergyMJ == nil {
				t.Fatalf("no energy for %+v", r.GPUs[i])
			}
			r.GPUs[i].EnergyMJ = nil
		}
	}
	if d := cmp.Diff(want, got, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("Asker differs from Serve (-serve +asker):\n%s", d)
	}
}

// A driver that hangs still gets an answer out before the hook's deadline:
// the minors with what could not be read, not a helper killed mid-call.
func TestServeAnswersByTheDeadline(t *testing.T) {
	var s *sim.Server
	hung := func(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
		var err error
		if s, err = sim.New(sim.Options{Node: req.Node, Count: 2, Model: "h100", Hang: true}); err != nil {
			return nil, err
		}
		return gpu.OpenInterface(ctx, s, req.Timeout.Duration)
	}
	t.Cleanup(func() {
		if s != nil {
			s.Release()
		}
	})
	req := agentproto.Direct{Node: "gpu01", Minors: []int{0, 1}, Deadline: time.Now().Add(300 * time.Millisecond)}
	req.Timeout.Duration = 10 * time.Second // each call's own bound is far beyond the deadline
	in, _ := json.Marshal(req)
	var out bytes.Buffer
	start := time.Now()
	if err := Serve(context.Background(), bytes.NewReader(in), &out, hung); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("answered after %s, past the 300 ms deadline", el)
	}
	var r agentproto.Response
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatalf("answer %q: %v", out.String(), err)
	}
	if len(r.GPUs) != 2 && r.Error == "" || len(r.GPUs) == 2 && r.GPUs[0].UUID != "" {
		t.Errorf("answer %+v, want the minors without identities, or NVML's error", r)
	}
}
