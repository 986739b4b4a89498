package browser

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// recorder is a testing.TB that records how a test would have ended.
type recorder struct {
	testing.TB
	ended string // "fatal", "skip" or "" (went on)
	msg   string
}

func (r *recorder) Helper() {}

func (r *recorder) Fatalf(format string, args ...any) {
	r.ended, r.msg = "fatal", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func (r *recorder) Skipf(format string, args ...any) {
	r.ended, r.msg = "skip", fmt.Sprintf(format, args...)
	runtime.Goexit()
}

func TestRequire(t *testing.T) {
	present := filepath.Join(t.TempDir(), "chromium")
	if err := os.WriteFile(present, nil, 0o755); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "chromium")
	for _, tc := range []struct {
		name, path, require, want string
	}{
		{"present", present, "", ""},
		{"present required", present, "1", ""},
		{"missing skips", missing, "", "skip"},
		{"missing required fails", missing, "1", "fatal"},
		{"missing, required is not 1", missing, "0", "skip"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &recorder{}
			done := make(chan struct{})
			go func() {
				defer close(done)
				require(r, tc.path, func(k string) string {
					if k == requireEnv {
						return tc.require
					}
					return ""
				})
			}()
			<-done
			if r.ended != tc.want {
				t.Errorf("ended %q (%s), want %q", r.ended, r.msg, tc.want)
			}
			if r.ended == "fatal" && !strings.Contains(r.msg, "test/deps.sh") {
				t.Errorf("failure %q does not say how to install chromium", r.msg)
			}
		})
	}
}

// TestShot starts the real browser at the size asked for and saves a PNG
// of the page.
func TestShot(t *testing.T) {
	ctx := NewBrowser(t, 640, 480)
	if err := chromedp.Do(ctx, chromedp.Navigate(`data:text/html,<p id="x">hello</p>`), chromedp.WaitVisible("#x")); err != nil {
		t.Fatalf("open a page: %v", err)
	}
	w, err := chromedp.Run(ctx, chromedp.Evaluate[float64](`window.innerWidth`))
	if err != nil {
		t.Fatal(err)
	}
	if w != 640 {
		t.Errorf("window is %v px wide, want 640", w)
	}
	dir := t.TempDir()
	Shot(t, ctx, dir, "page.png")
	png, err := os.ReadFile(filepath.Join(dir, "page.png"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("page.png is not a PNG: % x", png[:min(len(png), 8)])
	}
}

func TestShotDir(t *testing.T) {
	want := filepath.Join(t.TempDir(), "shots", "deep")
	t.Setenv("GPUSUITE_WEB_SCREENSHOTS", want)
	if got := ShotDir(t); got != want {
		t.Errorf("ShotDir = %q, want %q", got, want)
	}
	if fi, err := os.Stat(want); err != nil || !fi.IsDir() {
		t.Errorf("ShotDir did not make %s: %v", want, err)
	}
	t.Setenv("GPUSUITE_WEB_SCREENSHOTS", "")
	if got := ShotDir(t); got == "" || got == want {
		t.Errorf("ShotDir without the variable = %q, want a temporary directory", got)
	}
}
