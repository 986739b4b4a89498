package hook

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMIGRoot: under a root (hooks.root, the real-Slurm tests' MIG node)
// gres.conf names ROOT/dev/nvidia-caps/nvidia-capN and mig-minors is
// ROOT/proc/driver/nvidia-caps/mig-minors; the slices are mapped as
// they are from /dev and /proc. Before, a cap outside /dev/nvidia-caps
// was no MIG device and the slices were recorded as whole GPUs.
func TestMIGRoot(t *testing.T) {
	root := t.TempDir()
	etc := filepath.Join(root, "etc")
	minors := filepath.Join(root, "proc/driver/nvidia-caps")
	for _, d := range []string{etc, minors} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	gres := strings.ReplaceAll(gresFixture, "/dev/", root+"/dev/")
	if err := os.WriteFile(filepath.Join(etc, "gres.conf"), []byte(gres), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(minors, "mig-minors"), []byte(migMinorsFixture), 0o644); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "SLURM_CONF" {
			return filepath.Join(etc, "slurm.conf")
		}
		return ""
	}
	ids := []int{0, 1, 2, 3, 4}
	got, err := migSlices(getenv, filepath.Join(root, "proc"), filepath.Join(root, "dev"), "gpu05", ids)
	if err != nil {
		t.Fatal(err)
	}
	want := mapMIG(ids, parseGres([]byte(gresFixture), "gpu05"), func() (map[int]migPath, error) {
		return parseMIGMinors([]byte(migMinorsFixture)), nil
	})
	if len(want) == 0 || !want[0].MIG || want[0].Unmapped != "" {
		t.Fatalf("fixture: slice 0 not mapped from /dev: %+v", want)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("slices under %s (-from /dev +under root):\n%s", root, d)
	}
}
