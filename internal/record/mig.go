package record

import (
	"strconv"
	"strings"
)

// MIGProfile is a MIG profile's name read: "3g.40gb" is a GPU instance of
// 3 compute slices and 40 GB; "1c.3g.40gb" a compute instance of 1 of
// those slices. Slurm's gres type (record.GPU's Profile) and NVML's name
// of a MIG device ("NVIDIA A100-SXM4-80GB MIG 1g.10gb") both end in one.
type MIGProfile struct {
	// Slices is the GPU instance's compute slices (1 to 7), GB its memory.
	Slices, GB int
	// Compute is a compute instance's slices ("1c."), 0 for the whole
	// GPU instance.
	Compute int
}

// ParseMIGProfile reads a profile name, "[<c>c.]<g>g.<GB>gb" with the
// media extensions' "+me" allowed; ok is false for anything else (a
// whole GPU's type: a100, t4).
func ParseMIGProfile(name string) (MIGProfile, bool) {
	var p MIGProfile
	rest := strings.TrimSuffix(name, "+me")
	if c, r, ok := strings.Cut(rest, "c."); ok {
		n, ok := migSlices(c)
		if !ok {
			return MIGProfile{}, false
		}
		p.Compute, rest = n, r
	}
	g, mem, ok := strings.Cut(rest, "g.")
	if !ok {
		return MIGProfile{}, false
	}
	n, ok := migSlices(g)
	gbText, hasGB := strings.CutSuffix(mem, "gb")
	gb, err := strconv.Atoi(gbText)
	if !ok || !hasGB || err != nil || gb < 1 {
		return MIGProfile{}, false
	}
	p.Slices, p.GB = n, gb
	return p, true
}

// migSlices reads a profile's count of slices: one digit, 1 to 7.
func migSlices(s string) (int, bool) {
	if len(s) != 1 || s[0] < '1' || s[0] > '7' {
		return 0, false
	}
	return int(s[0] - '0'), true
}

// MIGProfileName is the profile NVML's name of a MIG device ends in
// ("NVIDIA A100-SXM4-80GB MIG 1g.10gb": "1g.10gb"); ok is false for a
// whole GPU's name.
func MIGProfileName(model string) (string, bool) {
	_, prof, ok := strings.Cut(model, " MIG ")
	return strings.TrimSpace(prof), ok
}
