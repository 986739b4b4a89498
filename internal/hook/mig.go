package hook

// MIG slices: Slurm schedules a MIG instance as a typed gpu gres whose
// gres.conf record names the parent's /dev/nvidiaN and the instance's
// nvidia-caps devices (MultipleFiles=, or File= for one cap). The caps'
// minors lead, through the driver's /proc/driver/nvidia-caps/mig-minors,
// to the GPU minor, GPU instance and compute instance. This is files only:
// the hooks link no NVML, and the MIG UUID is read later from the parent
// (internal/gpu, Library.MIGUUID).

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// maxMIGFile bounds each file the mapping reads: a gres.conf or a
// mig-minors table larger than this is not one the hook trusts.
const maxMIGFile = 1 << 20

// capsDir is where the driver's nvidia-caps device files live.
const capsDir = "/dev/nvidia-caps/"

// gresDevice is one gpu device of a node's gres.conf, in Slurm's order.
type gresDevice struct {
	Type  string
	Files []string
}

// migPath is one line of mig-minors: a cap's minor names a GPU instance
// (CI < 0) or a compute instance inside it.
type migPath struct {
	GPU, GI, CI int
}

// migSlice is what the files say about one allocated gres id.
type migSlice struct {
	MIG     bool // the id is a MIG slice (else a whole GPU: nothing changes)
	Minor   int  // the parent GPU's minor
	GI, CI  int
	Profile string
	// Unmapped says why a MIG slice could not be followed to its instance.
	Unmapped string
}

// readBounded reads at most maxMIGFile bytes of path.
func readBounded(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxMIGFile+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > maxMIGFile {
		return nil, fmt.Errorf("read %s: longer than %d bytes", path, maxMIGFile)
	}
	return data, nil
}

// parseMIGMinors reads mig-minors lines such as "gpu0/gi1/ci0/access 12"
// and "gpu0/gi1/access 11"; the config and monitor caps are not slices.
func parseMIGMinors(data []byte) map[int]migPath {
	out := map[int]migPath{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 2 {
			continue
		}
		minor, err := strconv.Atoi(f[1])
		if err != nil {
			continue
		}
		parts := strings.Split(f[0], "/")
		if len(parts) < 3 || parts[len(parts)-1] != "access" {
			continue
		}
		p := migPath{GI: -1, CI: -1}
		var ok bool
		if p.GPU, ok = numAfter(parts[0], "gpu"); !ok {
			continue
		}
		if p.GI, ok = numAfter(parts[1], "gi"); !ok {
			continue
		}
		if len(parts) == 4 {
			if p.CI, ok = numAfter(parts[2], "ci"); !ok {
				continue
			}
		} else if len(parts) != 3 {
			continue
		}
		out[minor] = p
	}
	return out
}

func numAfter(s, prefix string) (int, bool) {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	return n, err == nil && n >= 0
}

// parseGres lists node's gpu devices in gres.conf order, the order of
// Slurm's gres bitmap: File= expands a bracket range into one device per
// file, MultipleFiles= is one device. Lines for other nodes or other gres
// are skipped; continuation lines are not used by Slurm for gres.conf.
func parseGres(data []byte, node string) []gresDevice {
	var out []gresDevice
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		kv := map[string]string{}
		for _, f := range strings.Fields(line) {
			k, v, ok := strings.Cut(f, "=")
			if ok {
				kv[strings.ToLower(k)] = v
			}
		}
		if kv["name"] != "gpu" {
			continue
		}
		if n, ok := kv["nodename"]; ok && !hostMatch(n, node) {
			continue
		}
		switch {
		case kv["multiplefiles"] != "":
			files, err := slurmstate.ExpandHostlist(kv["multiplefiles"], maxGresFiles)
			if err != nil {
				files = strings.Split(kv["multiplefiles"], ",")
			}
			out = append(out, gresDevice{Type: kv["type"], Files: files})
		case kv["file"] != "":
			files, err := slurmstate.ExpandHostlist(kv["file"], maxGresFiles)
			if err != nil {
				files = []string{kv["file"]} // Slurm would refuse it: as written
			}
			for _, f := range files {
				out = append(out, gresDevice{Type: kv["type"], Files: []string{f}})
			}
		}
	}
	return out
}

// maxGresFiles bounds one File= or NodeName= expansion: a node has a few
// dozen devices.
const maxGresFiles = 4096

// hostMatch reports whether node is in a NodeName hostlist.
func hostMatch(list, node string) bool {
	names, err := slurmstate.ExpandHostlist(list, maxGresFiles)
	if err != nil {
		return false
	}
	return slices.Contains(names, node)
}

// mapMIG follows each gres id (a position in devs) to its MIG instance,
// through the mig-minors table readMinors gives. It returns nil, without
// calling readMinors, when devs hold no MIG device: a whole-GPU node is
// left exactly as before.
func mapMIG(ids []int, devs []gresDevice, readMinors func() (map[int]migPath, error)) []migSlice {
	if !slices.ContainsFunc(devs, isMIG) {
		return nil
	}
	minors, minorsErr := readMinors()
	out := make([]migSlice, len(ids))
	for i, id := range ids {
		s := &out[i]
		s.Minor, s.GI, s.CI = id, -1, -1
		if id < 0 || id >= len(devs) {
			s.Unmapped = fmt.Sprintf("gres id %d: gres.conf lists %d gpu devices for this node", id, len(devs))
			s.MIG = true
			continue
		}
		d := devs[id]
		parent := -1
		var caps []int
		for _, f := range d.Files {
			if rest, ok := strings.CutPrefix(f, capsDir+"nvidia-cap"); ok {
				if n, err := strconv.Atoi(rest); err == nil {
					caps = append(caps, n)
				}
			} else if rest, ok := strings.CutPrefix(f, "/dev/nvidia"); ok {
				if n, err := strconv.Atoi(rest); err == nil {
					parent = n
				}
			}
		}
		if len(caps) == 0 {
			// a whole GPU beside slices: its minor is its device file's
			if parent >= 0 {
				s.Minor = parent
			}
			continue
		}
		s.MIG, s.Profile = true, d.Type
		if parent >= 0 {
			s.Minor = parent
		}
		if minorsErr != nil {
			s.Unmapped = "mig-minors: " + minorsErr.Error()
			continue
		}
		s.Unmapped = followCaps(s, caps, parent, minors)
	}
	return out
}

func isMIG(d gresDevice) bool {
	for _, f := range d.Files {
		if strings.HasPrefix(f, capsDir) {
			return true
		}
	}
	return false
}

// followCaps fills s's GPU, GI and CI from the record's caps and returns
// why it could not.
func followCaps(s *migSlice, caps []int, parent int, minors map[int]migPath) string {
	gpu := -1
	for _, c := range caps {
		p, ok := minors[c]
		if !ok {
			return fmt.Sprintf("nvidia-cap%d: not in mig-minors", c)
		}
		if gpu >= 0 && p.GPU != gpu || parent >= 0 && p.GPU != parent {
			return fmt.Sprintf("nvidia-cap%d: a slice of gpu%d, not of gpu%d", c, p.GPU, max(gpu, parent))
		}
		gpu = p.GPU
		if s.GI >= 0 && p.GI != s.GI {
			return fmt.Sprintf("nvidia-cap%d: GPU instance %d, not %d", c, p.GI, s.GI)
		}
		s.GI = p.GI
		if p.CI >= 0 {
			s.CI = p.CI
		}
	}
	s.Minor = gpu
	if s.CI < 0 {
		return fmt.Sprintf("gpu%d/gi%d: no compute instance cap in the record", gpu, s.GI)
	}
	return ""
}

// migSlices reads the node's gres.conf (beside SLURM_CONF) and the
// driver's mig-minors and maps ids. It returns nil, with no file read
// beyond gres.conf, for a node without MIG gres; why gres.conf could not
// be read is returned for the log only (a node may well have none).
//
// devRoot is where gres.conf's device files are (/dev on a node): its
// files are read as the /dev they stand for.
func migSlices(getenv func(string) string, procRoot, devRoot, node string, ids []int) ([]migSlice, error) {
	conf := getenv("SLURM_CONF")
	if conf == "" || len(ids) == 0 {
		return nil, nil
	}
	data, err := readBounded(filepath.Join(filepath.Dir(conf), "gres.conf"))
	if err != nil {
		return nil, fmt.Errorf("read gres.conf beside %s: %w", conf, err)
	}
	devs := parseGres(data, node)
	if devRoot != "" && devRoot != "/dev" {
		for _, d := range devs {
			for i, f := range d.Files {
				if rest, ok := strings.CutPrefix(f, devRoot+"/"); ok {
					d.Files[i] = "/dev/" + rest
				}
			}
		}
	}
	return mapMIG(ids, devs, func() (map[int]migPath, error) {
		mm, err := readBounded(filepath.Join(procRoot, "driver/nvidia-caps/mig-minors"))
		if err != nil {
			return nil, err
		}
		return parseMIGMinors(mm), nil
	}), nil
}

// asSlices turns the identified parents of MIG slices into the slices:
// the parent's UUID moves to Parent (the whole GPU is not the job's), its
// energy counter is the parent's and is not the slice's to record, and an
// unmapped slice is named in quality with its reason.
func asSlices(gpus []record.GPU, slices []migSlice, quality []string) []string {
	for i := range gpus {
		if i >= len(slices) || !slices[i].MIG {
			continue
		}
		s, g := slices[i], &gpus[i]
		if g.Parent == "" { // hook-gpus did not already read the slice
			g.Parent, g.UUID = g.UUID, ""
		}
		g.EnergyMJ, g.Profile = nil, s.Profile
		g.Missing = append(g.Missing, "energy: a MIG slice has no counter of its own (the parent's is shared)")
		if s.Unmapped != "" {
			g.Unmapped = s.Unmapped
			quality = append(quality, fmt.Sprintf("mig_unmapped: gpu_minor_%d %s: %s", g.Minor, s.Profile, s.Unmapped))
			continue
		}
		gi, ci := s.GI, s.CI
		g.GI, g.CI = &gi, &ci
	}
	return quality
}

// migRefs is what hook-gpus needs to read the slices' MIG UUIDs: nil
// without slices, else one entry per GPU, nil for a whole GPU or an
// unmapped slice.
func migRefs(slices []migSlice) []*agentproto.MIGRef {
	var out []*agentproto.MIGRef
	for i, s := range slices {
		if !s.MIG || s.Unmapped != "" {
			continue
		}
		if out == nil {
			out = make([]*agentproto.MIGRef, len(slices))
		}
		out[i] = &agentproto.MIGRef{GI: s.GI, CI: s.CI}
	}
	return out
}
