package demo

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Run makes the simulated cluster under the WorkRoot it is given (the
// signal test sees it there); one it cannot use is refused, not
// silently replaced.
func TestRunWorkRootRefused(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, root := range []string{filepath.Join(t.TempDir(), "gone"), file} {
		t.Run(filepath.Base(root), func(t *testing.T) {
			o := Defaults()
			o.Dir, o.WorkRoot = t.TempDir(), root
			err := Run(context.Background(), &bytes.Buffer{}, o)
			if err == nil || !strings.HasPrefix(err.Error(), "make the simulated cluster's directory: ") {
				t.Errorf("Run with WorkRoot %s: %v, want it refused", root, err)
			}
			if left, _ := filepath.Glob(filepath.Join(o.Dir, "*")); len(left) > 0 {
				t.Errorf("a refused run left %v", left)
			}
		})
	}
}

func TestWorkRoot(t *testing.T) {
	if got := workRoot("/some/where"); got != "/some/where" {
		t.Errorf("workRoot of a given root = %q", got)
	}
	want := ""
	if st, err := os.Stat(memRoot); err == nil && st.IsDir() {
		want = memRoot
	}
	if got := workRoot(""); got != want {
		t.Errorf("workRoot(\"\") = %q, want %q", got, want)
	}
}
