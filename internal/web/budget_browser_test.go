package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/aicloud/gpusuite/internal/testkit/browser"
)

// TestBudgetBrowser drives headless chromium as vision's lead, logged in
// through the proxy's header under web.private_data: the board's header
// says how much of vision's budget is used and when it runs out, its
// link opens the budget page, whose chart draws the budget, the ideal
// line and the burn line, and nlp's budget page is refused.
func TestBudgetBrowser(t *testing.T) {
	lb := newLiveBoard(t, nil)
	o := budgetOptions(t, true)
	o.Board, o.BoardTick = lb.src, 100*time.Millisecond
	srv := newBoardServer(t, o)
	ctx, shots := browser.NewBrowser(t, 1440, 1000), browser.ShotDir(t)
	browser.Do(t, ctx, "log in as lena", func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
			return chromedp.Void{}, err
		}
		_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"X-Remote-User": "lena"}})
		return chromedp.Void{}, err
	})
	watchCSP(t, ctx)

	browser.Do(t, ctx, "board", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#budget-line"))
	noCSPViolations(t, ctx, "board")
	if got, want := browser.Text(t, ctx, "#budget-line"), "vision: 80 % of 100 GPU-h used, runs out 2026-11-28"; got != want {
		t.Errorf("board's header: %q, want %q", got, want)
	}
	browser.Shot(t, ctx, shots, "budget-board.png")

	browser.Do(t, ctx, "budget page", chromedp.Click("#budget-line"), chromedp.WaitVisible("#budget-1 svg"))
	noCSPViolations(t, ctx, "budget page")
	browser.Shot(t, ctx, shots, "budget.png")
	if h1 := browser.Text(t, ctx, "h1"); h1 != "Budget of vision" {
		t.Errorf("budget page's heading %q", h1)
	}
	if got := browser.Text(t, ctx, "#budget-runout-1"); got != "2026-11-28" {
		t.Errorf("run-out date %q, want 2026-11-28", got)
	}
	// The budget, the ideal and the burn line, drawn with a length.
	if n := browser.Value[int](t, ctx, `[...document.querySelectorAll("#budget-1 svg polyline")].filter(p => p.getTotalLength() > 100).length`); n != 3 {
		t.Errorf("the chart draws %d lines longer than 100 px, want 3 (budget, ideal, used)", n)
	}
	burn := `document.querySelectorAll("#budget-1 svg polyline")[2]`
	if n := browser.Value[int](t, ctx, burn+`.points.numberOfItems`); n != 27 {
		t.Errorf("the burn line has %d points, want 27: the start and November's 26 days to now", n)
	}
	if !strings.Contains(browser.Text(t, ctx, "#budget-1 svg polyline:nth-of-type(3) title"), "80.0 GPU-h") {
		t.Errorf("the burn line's title lacks the 80.0 GPU-h used: %q", browser.Text(t, ctx, "#budget-1 svg polyline:nth-of-type(3) title"))
	}

	browser.Do(t, ctx, "another team's budget", chromedp.Navigate(srv.URL+"/team/nlp/budget"), chromedp.WaitVisible("main"))
	if got := browser.Text(t, ctx, "main"); !strings.Contains(got, "only the team's members, its leads and admins") || strings.Contains(got, "GPU-h") {
		t.Errorf("nlp's budget page as lena: %q", got)
	}
}
