package agent

import (
	"math"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// NVML gives a MIG instance memory and processes but no power or energy:
// those are the parent GPU's. The rule (docs/agent.md): the parent's
// energy is shared among its instances in proportion to their profile's
// slice count (1g.10gb: 1, 3g.40gb: 3), over the instances that exist, so
// the shares of one parent sum to 1 and its energy is counted once. An
// instance whose profile cannot be read makes the parent's shares equal:
// a guess by size would then be no better.

// sliceCount is the compute slices of a MIG device by its NVML name
// ("NVIDIA A100-SXM4-80GB MIG 3g.40gb": 3; a compute instance
// "MIG 1c.3g.40gb": 1); 0 when the name has no profile.
func sliceCount(model string) int {
	name, ok := record.MIGProfileName(model)
	if !ok {
		return 0
	}
	p, ok := record.ParseMIGProfile(name)
	if !ok {
		return 0
	}
	if p.Compute != 0 {
		return p.Compute // a compute instance has c of the GPU instance's slices
	}
	return p.Slices
}

// migInstance is one MIG device as the share rule sees it.
type migInstance struct {
	uuid, parent, model string
}

// parentShares is each MIG instance's share of its parent's energy, by
// the rule above; whole GPUs are not in it.
func parentShares(ins []migInstance) map[string]float64 {
	type group struct {
		uuids   []string
		slices  []int
		unknown bool
	}
	groups := map[string]*group{}
	for _, m := range ins {
		if m.parent == "" {
			continue
		}
		g := groups[m.parent]
		if g == nil {
			g = &group{}
			groups[m.parent] = g
		}
		n := sliceCount(m.model)
		g.uuids, g.slices = append(g.uuids, m.uuid), append(g.slices, n)
		g.unknown = g.unknown || n == 0
	}
	out := map[string]float64{}
	for _, g := range groups {
		total := 0
		for _, n := range g.slices {
			total += n
		}
		for i, u := range g.uuids {
			if g.unknown {
				out[u] = 1 / float64(len(g.uuids))
			} else {
				out[u] = float64(g.slices[i]) / float64(total)
			}
		}
	}
	return out
}

// shareParents sets each MIG sample's ParentShare from the devices
// enumerated; nothing changes on a node without MIG.
func (a *Agent) shareParents(samples []record.Sample) {
	var ins []migInstance
	for _, d := range a.devs {
		if d.Parent != "" {
			ins = append(ins, migInstance{uuid: d.UUID, parent: d.Parent, model: d.Model})
		}
	}
	if len(ins) == 0 {
		return
	}
	shares := parentShares(ins)
	for i := range samples {
		if v, ok := shares[samples[i].UUID]; ok && samples[i].SampleMIG != nil {
			samples[i].SampleMIG.ParentShare = v
		}
	}
}

// parentReading is a whole GPU's energy counter as its latest sample read
// it: the instances sampled in the same cycle take their share of it.
type parentReading struct {
	t  time.Time
	mj uint64
}

// withParentEnergy is a MIG sample with its parent's counter reading of
// the same cycle in EnergyMJ, for folding its share into the aggregates;
// s itself when it is not a MIG sample or the parent gave no reading then.
// Whole-GPU samples are remembered as they pass, in segment order (a
// parent precedes its instances), so a replayed segment folds the same.
func (a *Agent) withParentEnergy(s *record.Sample) *record.Sample {
	if s.Parent() == "" {
		if s.EnergyMJ != nil {
			if a.parentEnergy == nil {
				a.parentEnergy = map[string]parentReading{}
			}
			a.parentEnergy[s.UUID] = parentReading{s.Time, *s.EnergyMJ}
		}
		return s
	}
	p, ok := a.parentEnergy[s.Parent()]
	if s.ParentShare() == 0 || !ok || !p.t.Equal(s.Time) || s.EnergyMJ != nil {
		return s
	}
	c := *s
	mj := p.mj
	c.EnergyMJ = &mj
	return &c
}

// uuidOf finds the UUID of an allocated GPU the hook could not name: a
// whole GPU by its minor, a MIG slice by its parent and instance ids. A
// slice carries its parent's minor, and taking that would hand the
// instance's job every sample of the whole GPU: a slice not found stays
// unnamed ("").
func (a *Agent) uuidOf(g record.GPU) string {
	if g.Parent != "" || g.Profile != "" || g.GI != nil || g.Unmapped != "" {
		if g.Parent == "" || g.GI == nil || g.CI == nil {
			return ""
		}
		for _, d := range a.devs {
			if d.Parent == g.Parent && d.GI == *g.GI && d.CI == *g.CI {
				return d.UUID
			}
		}
		return ""
	}
	uuid := ""
	for _, d := range a.devs {
		if d.Parent == "" && d.Minor == g.Minor {
			uuid = d.UUID
		}
	}
	return uuid
}

// migActivity gives a MIG instance's sample the utilization NVML has no
// call for: its SM activity from GPM (sm_active_pct, read through the
// parent per GPU instance on Hopper and later), so that its job's used
// time and idle are the instance's own. Without GPM it stays missing.
func migActivity(s *record.Sample) {
	if s.Parent() == "" || s.GPUUtil != nil {
		return
	}
	v, ok := s.Metrics["sm_active_pct"]
	if !ok || v < 0 || v > 100 {
		return
	}
	u := uint32(math.Round(v))
	s.GPUUtil = &u
	kept := s.Missing[:0]
	for _, m := range s.Missing {
		if !strings.HasPrefix(m, "gpu_util:") {
			kept = append(kept, m)
		}
	}
	s.Missing = kept
	if len(s.Missing) == 0 {
		s.Missing = nil
	}
}
