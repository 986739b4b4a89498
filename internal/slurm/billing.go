package slurm

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Weights are a partition's TRESBillingWeights: weight per TRES name,
// lower case as sacct prints TRES ("cpu", "mem", "gres/gpu",
// "gres/gpu:a100"). A memory weight is per MB, as Slurm applies it: a
// "G" suffix divides it by 1024 ("Mem=0.25G": 0.25 a GB).
type Weights map[string]float64

// ParseWeights reads TRESBillingWeights' text, e.g.
// "CPU=1.0,Mem=0.25G,GRES/gpu:a100=4.0"; "" or "(null)" is none.
func ParseWeights(s string) (Weights, error) {
	s = strings.TrimSpace(s)
	w := Weights{}
	if s == "" || s == "(null)" {
		return w, nil
	}
	for part := range strings.SplitSeq(s, ",") {
		name, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok || name == "" {
			return nil, fmt.Errorf("billing weight %q: want TRES=weight", part)
		}
		div := 1.0
		if n := len(val); n > 0 {
			if i := strings.IndexByte("KMGTP", val[n-1]&^0x20); i >= 0 {
				// The suffix scales the weight to a unit of that size;
				// Slurm counts memory in MB (M = 1).
				div = math.Pow(1024, float64(i-1))
				val = val[:n-1]
			}
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("billing weight %q: not a weight", part)
		}
		w[name] = v / div
	}
	return w, nil
}

// ParseTRES reads a TRES list as sacct prints it (AllocTRES:
// "billing=10,cpu=2,gres/gpu:a100=2,gres/gpu=2,mem=8G,node=1"); memory
// comes out in MB, as Slurm counts it. A part that does not parse is an
// error naming it.
func ParseTRES(s string) (map[string]float64, error) {
	out := map[string]float64{}
	for part := range strings.SplitSeq(strings.TrimSpace(s), ",") {
		if part == "" {
			continue
		}
		name, val, ok := strings.Cut(part, "=")
		name = strings.ToLower(strings.TrimSpace(name))
		if !ok || name == "" || val == "" {
			return nil, fmt.Errorf("TRES %q: want name=count", part)
		}
		mul := 1.0
		if i := strings.IndexByte("KMGTP", val[len(val)-1]); i >= 0 {
			mul, val = math.Pow(1024, float64(i-1)), val[:len(val)-1]
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
			return nil, fmt.Errorf("TRES %q: not a count", part)
		}
		out[name] = v * mul
	}
	return out, nil
}

// Billing is the billable TRES of an allocation (tres, as ParseTRES
// gives it) under w, the way slurmctld computes a job's billing: the sum
// of weight × count over the weighted TRES, or, under PriorityFlags=
// MAX_TRES, the largest of the node TRES (cpu, mem, node, gres/...) plus
// the sum of the others (licenses, burst buffers). Slurm keeps a job's
// billing as a whole number, the fraction cut off (Floor).
func Billing(w Weights, maxTRES bool, tres map[string]float64) float64 {
	var sum, top float64
	for name, weight := range w {
		v := weight * tres[name]
		if maxTRES && nodeTRES(name) {
			top = max(top, v)
			continue
		}
		sum += v
	}
	return sum + top
}

// nodeTRES says whether a TRES is allocated on nodes (MAX_TRES takes the
// largest of these).
func nodeTRES(name string) bool {
	return name == "cpu" || name == "mem" || name == "node" || strings.HasPrefix(name, "gres/")
}

// GPUType is the gres type among w's "gres/gpu:TYPE" weights that a GPU
// model's name holds ("a100" in "NVIDIA A100-SXM4-80GB"), "" if none: the
// type a job on that GPU was most likely given.
func (w Weights) GPUType(model string) string {
	m := strings.ToLower(model)
	best := ""
	for name := range w {
		t, ok := strings.CutPrefix(name, "gres/gpu:")
		if ok && t != "" && strings.Contains(m, t) && len(t) > len(best) {
			best = t
		}
	}
	return best
}

// Partition is one partition of `scontrol show partition -o`, as billing
// reads it.
type Partition struct {
	Name    string
	Weights string // TRESBillingWeights' text; "" none
}

// ParsePartitions reads `scontrol show partition -o`: a line a
// partition of Key=Value pairs. A line without PartitionName is an error
// naming its number; weights that do not parse are one too, so that a
// bad weight is never billed as none.
func ParsePartitions(out string) ([]Partition, error) {
	var ps []Partition
	for i, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		var p Partition
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			switch k {
			case "PartitionName":
				p.Name = v
			case "TRESBillingWeights":
				p.Weights = v
			}
		}
		if p.Name == "" {
			return nil, fmt.Errorf("scontrol show partition line %d: no PartitionName", i+1)
		}
		if p.Weights == "(null)" {
			p.Weights = ""
		}
		if _, err := ParseWeights(p.Weights); err != nil {
			return nil, fmt.Errorf("partition %s: %w", p.Name, err)
		}
		ps = append(ps, p)
	}
	return ps, nil
}

// MaxTRES says whether `scontrol show config` sets PriorityFlags with
// MAX_TRES.
func MaxTRES(config string) bool {
	for line := range strings.SplitSeq(config, "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || strings.TrimSpace(k) != "PriorityFlags" {
			continue
		}
		for f := range strings.SplitSeq(strings.TrimSpace(v), ",") {
			if strings.TrimSpace(f) == "MAX_TRES" {
				return true
			}
		}
	}
	return false
}
