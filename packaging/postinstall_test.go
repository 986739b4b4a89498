package packaging

import (
	"io/fs"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit"
)

// TestPostinstallQueues: the package makes the request queues, the
// service user's with their modes, over directories a root command made
// before (root:root 0755, which serve could not empty).
func TestPostinstallQueues(t *testing.T) {
	testkit.NeedRoot(t, "give the queues to another user")
	u, err := user.Lookup("nobody")
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	dir := filepath.Join(t.TempDir(), "requests")
	if err := os.MkdirAll(filepath.Join(dir, "pending"), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("sh", "postinstall.sh", "queues", dir, "nobody").CombinedOutput(); err != nil {
		t.Fatalf("postinstall.sh queues: %v\n%s", err, out)
	}
	for _, tc := range []struct {
		sub  string
		mode fs.FileMode
	}{
		{".", 0o755}, {"pending", 0o755}, {"applied", 0o755}, {"notes", 0o755}, {"notes/applied", 0o755},
		{"notes/pending", fs.ModeSticky | 0o733},
	} {
		fi, err := os.Stat(filepath.Join(dir, tc.sub))
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode() & (fs.ModePerm | fs.ModeSticky); got != tc.mode {
			t.Errorf("%s: mode %v, want %v", tc.sub, got, tc.mode)
		}
		if got := int(fi.Sys().(*syscall.Stat_t).Uid); got != uid {
			t.Errorf("%s: owned by uid %d, want nobody's %d", tc.sub, got, uid)
		}
	}
}
