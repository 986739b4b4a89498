// Package browser starts Debian's chromium headless for the tests
// that drive the dashboard through a real browser (internal/web and the
// end-to-end board test under test/slurm), and saves their screenshots.
// It is imported by tests only.
package browser

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Chromium is Debian's chromium, the one test/deps.sh installs.
const Chromium = "/usr/bin/chromium"

// Timeout bounds a browser's whole life; a test that wants less wraps
// the context in its own context.WithTimeout.
const Timeout = 3 * time.Minute

// requireEnv names the variable under which a missing browser fails the
// test instead of skipping it, like every other dependency of the suite.
const requireEnv = "GPUSUITE_REQUIRE_SLURM"

// Require skips the test when chromium is missing, or fails it under
// GPUSUITE_REQUIRE_SLURM=1. Tests call it before costly setup so that a
// machine without chromium learns it at once.
func Require(t testing.TB) {
	t.Helper()
	require(t, Chromium, os.Getenv)
}

func require(t testing.TB, path string, getenv func(string) string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		if getenv(requireEnv) == "1" {
			t.Fatalf("%s is missing: the browser tests need Debian's chromium (test/deps.sh installs it)", path)
		}
		t.Skipf("%s is missing (apt-get install chromium)", path)
	}
}

// NewBrowser starts chromium headless with a window of w × h pixels and a
// profile of its own, and returns the context to drive it with: it ends
// with the test, or after Timeout. A missing chromium skips the test, or
// fails it under GPUSUITE_REQUIRE_SLURM=1.
func NewBrowser(t testing.TB, w, h int) context.Context {
	t.Helper()
	return newBrowser(t, w, h)
}

// NewBrowserLang is NewBrowser set to the language lang ("ja"), as a
// reader's browser is: its interface (--lang) and the Accept-Language
// its requests send (--accept-lang).
func NewBrowserLang(t testing.TB, w, h int, lang string) context.Context {
	t.Helper()
	return newBrowser(t, w, h, chromedp.Flag("lang", lang), chromedp.Flag("accept-lang", lang))
}

func newBrowser(t testing.TB, w, h int, extra ...chromedp.ExecAllocatorOption) context.Context {
	t.Helper()
	Require(t)
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(Chromium), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck, chromedp.Flag("disable-quic", true), chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(w, h),
	}
	opts = append(opts, extra...)
	// Cleanups run last first: the browser ends before its profile
	// directory (a TempDir made above) is removed.
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelA)
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(cancelC)
	ctx, cancelT := context.WithTimeout(ctx, Timeout)
	t.Cleanup(cancelT)
	return ctx
}

// ShotDir is the directory screenshots go to: $GPUSUITE_WEB_SCREENSHOTS
// (made if missing) to keep them, else a temporary one.
func ShotDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("GPUSUITE_WEB_SCREENSHOTS")
	if dir == "" {
		return t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatalf("screenshot directory: %v", err)
	}
	return dir
}

// Shot saves a full-page screenshot of the browser of ctx as dir/name
// and logs where it is.
func Shot(t testing.TB, ctx context.Context, dir, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatalf("screenshot %s: %v", name, err)
	}
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, png, 0o644); err != nil {
		t.Fatalf("save screenshot: %v", err)
	}
	t.Logf("screenshot %s", p)
}
