package web_test

import (
	"context"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// watchCSP makes the tab record every Content-Security-Policy violation
// of the pages it loads from now on. The recorder is DevTools' own
// script, which the policy does not govern.
func watchCSP(t *testing.T, ctx context.Context) {
	t.Helper()
	err := chromedp.Do(ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.cspViolations = [];
document.addEventListener("securitypolicyviolation", function (e) {
  window.cspViolations.push(e.effectiveDirective + " blocked " + (e.blockedURI || "inline") + " at " + e.sourceFile + ":" + e.lineNumber + " " + (e.sample || ""));
});`})
		return chromedp.Void{}, err
	})
	if err != nil {
		t.Fatalf("watch CSP violations: %v", err)
	}
}

// noCSPViolations fails the test for each violation the current page
// recorded since it loaded.
func noCSPViolations(t *testing.T, ctx context.Context, where string) {
	t.Helper()
	vs, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`window.cspViolations || ["the CSP recorder did not run"]`))
	if err != nil {
		t.Fatalf("read CSP violations: %v", err)
	}
	for _, v := range vs {
		t.Errorf("%s: Content-Security-Policy violation: %s", where, v)
	}
}
