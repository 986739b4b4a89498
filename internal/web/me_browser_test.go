package web_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/aicloud/gpusuite/internal/testkit/browser"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestMyJobsBrowser drives headless chromium as alice, logged in
// through the proxy's header under web.private_data: the header's "My
// jobs" opens /me, which lists her runs, newest first, and not bob's,
// and the newest run's link opens its page; no page breaks the
// Content-Security-Policy.
func TestMyJobsBrowser(t *testing.T) {
	db, now := myJobsLedger(t)
	h, err := web.New(web.Options{DB: db, Location: time.UTC, Now: func() time.Time { return now }, PrivateData: true,
		UserHeader: "X-Remote-User"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(web.Secure(http.Handler(h)))
	t.Cleanup(func() { srv.Close(); h.Close() })
	ctx, shots := browser.NewBrowser(t, 1280, 800), browser.ShotDir(t)
	browser.Do(t, ctx, "log in as alice", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Remote-User": "alice"}})
		return chromedp.Void{}, err
	})
	watchCSP(t, ctx)

	browser.Do(t, ctx, "accounting", chromedp.Navigate(srv.URL+"/accounting"), chromedp.WaitVisible(`nav.main a[href="/me"]`))
	browser.Do(t, ctx, "my jobs", chromedp.Click(`nav.main a[href="/me"]`), chromedp.WaitVisible("#my-jobs"))
	noCSPViolations(t, ctx, "my jobs")
	browser.Shot(t, ctx, shots, "me.png")
	got := browser.Text(t, ctx, "#my-jobs")
	for _, want := range []string{"JOBID", "RUNNING", "COMPLETED", "TOTAL  2 runs"} {
		if !strings.Contains(got, want) {
			t.Errorf("/me lacks %q: %q", want, got)
		}
	}
	if strings.Contains(got, "bob") {
		t.Errorf("/me shows bob: %q", got)
	}
	href, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.querySelector("#my-jobs a").getAttribute("href")`))
	if err != nil || href != "/job/c1/9" {
		t.Fatalf("/me's first run links to %q (%v), want /job/c1/9", href, err)
	}
	browser.Do(t, ctx, "a run's page", chromedp.Click(`#my-jobs a[href="/job/c1/9"]`), chromedp.WaitVisible("main section"))
	noCSPViolations(t, ctx, "job page")
	if title, err := chromedp.Run(ctx, chromedp.Evaluate[string]("document.title")); err != nil || !strings.HasPrefix(title, "Job 9 ") {
		t.Errorf("the run's link opened %q (%v), want job 9's page", title, err)
	}
}
