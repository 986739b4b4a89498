package web_test

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/aicloud/gpusuite/internal/testkit/browser"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestBookBrowser drives headless chromium, logged in by basic auth:
// alice books n1 GPU 1 from its booking page with the keyboard alone (no
// click, the form works without a script); once the writer applied it,
// the board reads it booked for alice and for bob, and bob's booking
// page offers no button to free it. No page breaks the
// Content-Security-Policy.
func TestBookBrowser(t *testing.T) {
	e := newFormsEnv(t, web.Options{})
	ctx, shots := browser.NewBrowser(t, 1280, 900), browser.ShotDir(t)
	login := func(user string) {
		t.Helper()
		auth := "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+e.pass[user]))
		browser.Do(t, ctx, "log in as "+user, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
			if _, err := cdp.Call(ctx, tg, network.Enable, network.EnableParams{}); err != nil {
				return chromedp.Void{}, err
			}
			_, err := cdp.Call(ctx, tg, network.SetExtraHTTPHeaders, network.SetExtraHTTPHeadersParams{Headers: network.Headers{"Authorization": auth}})
			return chromedp.Void{}, err
		})
	}
	watchCSP(t, ctx)
	login("alice")
	page := e.url + "/book?node=n1&gpu=1"
	browser.Do(t, ctx, "booking page", chromedp.Navigate(page), chromedp.WaitVisible("#until"))
	if got := browser.Text(t, ctx, "#no-bookings"); got != "Nobody has booked it." {
		t.Errorf("before the booking the page says %q", got)
	}
	browser.Do(t, ctx, "book from the keyboard", chromedp.Focus("#until"), chromedp.KeyEvent("4h"), chromedp.KeyEvent("\t"),
		chromedp.KeyEvent("NeurIPS run"), chromedp.KeyEvent("\r"))
	browser.Do(t, ctx, "sent", chromedp.WaitVisible("#book-status"))
	if got := browser.Text(t, ctx, "#book-status"); !strings.HasPrefix(got, "Sent: ") {
		t.Errorf("after the post the page says %q", got)
	}
	noCSPViolations(t, ctx, "booking page")

	e.apply(t)
	browser.Do(t, ctx, "after the writer's pass", chromedp.Reload(), chromedp.WaitVisible("#bookings"))
	if got := browser.Text(t, ctx, "#book-status"); !strings.Contains(got, "is kept; every board shows it") {
		t.Errorf("after the pass the page says %q", got)
	}
	if row := browser.Text(t, ctx, "#bookings tbody tr"); !strings.Contains(row, "alice") || !strings.Contains(row, "NeurIPS run") {
		t.Errorf("the booking's row reads %q", row)
	}
	if !browser.Eval(t, ctx, `document.querySelector('#bookings button[id^="free-"]') !== null`) {
		t.Error("alice has no button to free her booking")
	}
	browser.Shot(t, ctx, shots, "book.png")

	for _, user := range []string{"alice", "bob"} {
		login(user)
		browser.Do(t, ctx, "board as "+user, chromedp.Navigate(e.url+"/"), chromedp.WaitVisible("#gpu-n1-1"))
		if st := browser.Text(t, ctx, "#gpu-n1-1 .st"); !strings.Contains(st, "booked") {
			t.Errorf("as %s the board reads n1 GPU 1 %q, want booked", user, st)
		}
		if st := browser.Text(t, ctx, "#gpu-n1-0 .st"); !strings.Contains(st, "free") {
			t.Errorf("as %s the board reads n1 GPU 0 %q, want free", user, st)
		}
	}
	browser.Do(t, ctx, "bob's booking page", chromedp.Navigate(page), chromedp.WaitVisible("#bookings"))
	if !browser.Eval(t, ctx, `document.querySelector('#bookings button[id^="free-"]') === null`) {
		t.Error("bob has a button to free alice's booking")
	}
	noCSPViolations(t, ctx, "bob's booking page")
}
