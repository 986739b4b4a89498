package hook

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/gpu"
	"github.com/aicloud/gpusuite/internal/hookgpus"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// A real mig-minors table as the driver writes it (A100, two GPUs shown).
const migMinorsFixture = `config 1
monitor 2
gpu0/gi0/access 3
gpu0/gi0/ci0/access 4
gpu0/gi1/access 12
gpu0/gi1/ci0/access 13
gpu0/gi2/access 21
gpu0/gi2/ci0/access 22
gpu1/gi1/access 147
gpu1/gi1/ci0/access 148
garbage line here
gpu2/gix/access 300
`

// gres.conf as NVIDIA's slurm-mig-discovery writes it, with a whole GPU.
const gresFixture = `# typed MIG gres
AutoDetect=off
NodeName=gpu05 Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap12,/dev/nvidia-caps/nvidia-cap13
NodeName=gpu[04-05] Name=gpu Type=3g.40gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap[21-22]
NodeName=gpu05 Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap147,/dev/nvidia-caps/nvidia-cap148
NodeName=gpu05 Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap99
NodeName=gpu05 Name=gpu Type=a100 File=/dev/nvidia[2-3]
NodeName=gpu06 Name=gpu Type=a100 File=/dev/nvidia[0-7]
Name=mps Count=100
`

func TestParseMIGMinors(t *testing.T) {
	got := parseMIGMinors([]byte(migMinorsFixture))
	want := map[int]migPath{
		3: {0, 0, -1}, 4: {0, 0, 0}, 12: {0, 1, -1}, 13: {0, 1, 0},
		21: {0, 2, -1}, 22: {0, 2, 0}, 147: {1, 1, -1}, 148: {1, 1, 0},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
}

func TestParseGres(t *testing.T) {
	got := parseGres([]byte(gresFixture), "gpu05")
	want := []gresDevice{
		{"1g.10gb", []string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap12", "/dev/nvidia-caps/nvidia-cap13"}},
		{"3g.40gb", []string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"}},
		{"1g.10gb", []string{"/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap147", "/dev/nvidia-caps/nvidia-cap148"}},
		{"1g.10gb", []string{"/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap99"}},
		{"a100", []string{"/dev/nvidia2"}},
		{"a100", []string{"/dev/nvidia3"}},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
	if got := parseGres([]byte(gresFixture), "gpu06"); len(got) != 8 {
		t.Errorf("gpu06: %d devices, want 8", len(got))
	}
}

func TestMapMIG(t *testing.T) {
	devs := parseGres([]byte(gresFixture), "gpu05")
	minors := parseMIGMinors([]byte(migMinorsFixture))
	for _, tt := range []struct {
		name string
		ids  []int
		devs []gresDevice
		err  error
		want []migSlice
	}{
		{"two slices of one GPU", []int{0, 1}, devs, nil, []migSlice{
			{MIG: true, Minor: 0, GI: 1, CI: 0, Profile: "1g.10gb"},
			{MIG: true, Minor: 0, GI: 2, CI: 0, Profile: "3g.40gb"},
		}},
		{"whole GPU beside slices", []int{4}, devs, nil, []migSlice{{Minor: 2, GI: -1, CI: -1}}},
		{"slice of another GPU", []int{2}, devs, nil, []migSlice{
			{MIG: true, Minor: 0, GI: -1, CI: -1, Profile: "1g.10gb", Unmapped: "nvidia-cap147: a slice of gpu1, not of gpu0"},
		}},
		{"unknown cap minor", []int{3}, devs, nil, []migSlice{
			{MIG: true, Minor: 1, GI: -1, CI: -1, Profile: "1g.10gb", Unmapped: "nvidia-cap99: not in mig-minors"},
		}},
		{"id beyond gres.conf", []int{9}, devs, nil, []migSlice{
			{MIG: true, Minor: 9, GI: -1, CI: -1, Unmapped: "gres id 9: gres.conf lists 6 gpu devices for this node"},
		}},
		{"no mig-minors", []int{0}, devs, errors.New("no such file"), []migSlice{
			{MIG: true, Minor: 0, GI: -1, CI: -1, Profile: "1g.10gb", Unmapped: "mig-minors: no such file"},
		}},
		{"whole-GPU node unchanged", []int{0, 2}, parseGres([]byte(gresFixture), "gpu06"), nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := mapMIG(tt.ids, tt.devs, func() (map[int]migPath, error) { return minors, tt.err })
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Error(d)
			}
		})
	}
}

// A job given two slices of gpu05's minor 0 and an unknown cap is recorded
// with the slices' profile, instance ids and parent, the unmapped one with
// its reason, and the hook still succeeds.
func TestRunRecordsMIGSlices(t *testing.T) {
	cfg := simConfig(t)
	deps := migNode(t, "0,1,3")
	// minors [2,3,0,1] by index: minor 0 is index 2, cut as the fixture's
	// gi1 (1g.10gb) and gi2 (3g.40gb)
	var migs []*sim.MIGDevice
	deps.AskGPUs = hookgpus.Asker(func(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
		s, err := sim.New(sim.Options{Node: req.Node, Count: 4, Model: "a100", Minors: []int{2, 3, 0, 1}})
		if err != nil {
			return nil, err
		}
		migs = s.Device(2).EnableMIGLayout([]string{"1g.10gb", "3g.40gb"})
		return gpu.OpenInterface(ctx, s, time.Second)
	})
	if _, err := Run(context.Background(), record.JobStart, cfg, deps, logger(discard())); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, cfg.Spool.Dir)
	if len(evs) != 1 {
		t.Fatalf("%d events, want 1", len(evs))
	}
	type slice struct {
		Minor           int
		Parent, Profile string
		GI, CI          int
		UUID, Unmapped  string
		Energy          bool
	}
	var got []slice
	for _, g := range evs[0].GPUs {
		s := slice{Minor: g.Minor, Parent: g.Parent, Profile: g.Profile, UUID: g.UUID, Unmapped: g.Unmapped, Energy: g.EnergyMJ != nil, GI: -1, CI: -1}
		if g.GI != nil {
			s.GI, s.CI = *g.GI, *g.CI
		}
		got = append(got, s)
	}
	want := []slice{
		{Minor: 0, Parent: sim.UUID("gpu05", 2), Profile: "1g.10gb", GI: 1, CI: 0, UUID: migs[0].UUID()},
		{Minor: 0, Parent: sim.UUID("gpu05", 2), Profile: "3g.40gb", GI: 2, CI: 0, UUID: migs[1].UUID()},
		{Minor: 1, Parent: sim.UUID("gpu05", 3), Profile: "1g.10gb", GI: -1, CI: -1, Unmapped: "nvidia-cap99: not in mig-minors"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Error(d)
	}
	if q := strings.Join(evs[0].Quality, "\n"); !strings.Contains(q, "mig_unmapped: gpu_minor_1 1g.10gb: nvidia-cap99: not in mig-minors") {
		t.Errorf("quality does not name the unmapped slice: %s", q)
	}
}

// migNode is gpu05's gres.conf and mig-minors (the fixtures) and the job's
// environment asking for the gres ids.
func migNode(t *testing.T, ids string) Deps {
	t.Helper()
	etc, proc := t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(etc, "gres.conf"), []byte(gresFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(proc, "driver/nvidia-caps"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proc, "driver/nvidia-caps/mig-minors"), []byte(migMinorsFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	deps := testDeps(envWith("SLURMD_NODENAME", "gpu05", "SLURM_JOB_GPUS", ids,
		"SLURM_CONF", filepath.Join(etc, "slurm.conf")))
	deps.ProcRoot = proc
	return deps
}

// The health check looks at the job's slice, not at its parent, which runs
// other jobs' slices: a stray on the slice drains the node, another job's
// process on the next slice does not.
func TestHealthCheckSlices(t *testing.T) {
	for _, tt := range []struct {
		name       string
		own, other uint32 // pids on the job's slice and on the next one
		unhealthy  string
	}{
		{"other job on the next slice", 0, 200, ""},
		{"stray on the job's slice", 300, 0, "outside any job"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := simConfig(t)
			cfg.Hooks.HealthCheck = true
			deps := migNode(t, "0")
			dir := filepath.Join(deps.ProcRoot, "200")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "cgroup"), []byte("0::/system.slice/slurmstepd.scope/job_7/step_0/user/task_0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			deps.AskGPUs = hookgpus.Asker(func(ctx context.Context, req agentproto.Direct) (*gpu.Library, error) {
				s, err := sim.New(sim.Options{Node: req.Node, Count: 4, Model: "a100", Minors: []int{2, 3, 0, 1}})
				if err != nil {
					return nil, err
				}
				migs := s.Device(2).EnableMIGLayout([]string{"1g.10gb", "3g.40gb"}) // minor 0
				for i, pid := range []uint32{tt.own, tt.other} {
					if pid != 0 {
						migs[i].SetProcs([]nvml.ProcessInfo{{Pid: pid, UsedGpuMemory: 1 << 30}})
					}
				}
				return gpu.OpenInterface(ctx, s, time.Second)
			})
			res, err := Run(context.Background(), record.JobStart, cfg, deps, logger(discard()))
			if err != nil {
				t.Fatal(err)
			}
			if tt.unhealthy == "" && res.Unhealthy != "" || tt.unhealthy != "" && !strings.Contains(res.Unhealthy, tt.unhealthy) {
				t.Errorf("unhealthy = %q, want %q", res.Unhealthy, tt.unhealthy)
			}
		})
	}
}

// The simulated backend cut by gpu.simulated.mig, as the hooks built with
// -tags simulated open it: the slices are read end to end from config.
func TestRunMIGFromConfig(t *testing.T) {
	cfg := simConfig(t)
	cfg.GPU.Simulated.Model = "a100"
	cfg.GPU.Simulated.MIG = []string{"", "", "1g.10gb,3g.40gb"} // index 2 is minor 0
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), record.JobEnd, cfg, migNode(t, "0,1"), logger(discard())); err != nil {
		t.Fatal(err)
	}
	evs := readEvents(t, cfg.Spool.Dir)
	if len(evs) != 1 || len(evs[0].GPUs) != 2 {
		t.Fatalf("events %+v", evs)
	}
	parent := sim.UUID("gpu05", 2)
	for i, want := range []string{sim.MIGUUID(parent, 0), sim.MIGUUID(parent, 1)} {
		if g := evs[0].GPUs[i]; g.UUID != want || g.Parent != parent {
			t.Errorf("GPU %d: %+v, want uuid %s on %s", i, g, want, parent)
		}
	}
	cfg.GPU.Simulated.MIG = []string{"", "", "", "", "1g.10gb"}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "gpu.simulated.mig") {
		t.Errorf("five layouts for four GPUs: %v", err)
	}
}
