package browser

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Do runs steps in the browser of ctx and fails the test, naming what,
// if one fails.
func Do(t testing.TB, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// Text returns the trimmed textContent of the first element sel selects,
// or "" when none does. It reads it in one evaluation in the page: a
// live update may replace the element between a query and a separate
// read of its text.
func Text(t testing.TB, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`(function (el) { return el ? el.textContent : ""; })(document.querySelector(`+strconv.Quote(sel)+`))`))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

// Value evaluates js in the page and returns its value, failing the test
// if it cannot.
func Value[T any](t testing.TB, ctx context.Context, js string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](js))
	if err != nil {
		t.Fatalf("%s: %v", js, err)
	}
	return v
}

// Eval evaluates js, a condition, in the page.
func Eval(t testing.TB, ctx context.Context, js string) bool {
	t.Helper()
	return Value[bool](t, ctx, js)
}

// Wait polls js, a condition, in the page until it holds, and fails the
// test, naming what, if it does not within timeout.
func Wait(t testing.TB, ctx context.Context, what string, timeout time.Duration, js string) {
	t.Helper()
	Do(t, ctx, what, chromedp.Poll[chromedp.Void](js, chromedp.WithPollingTimeout(timeout)))
}
