package web_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/testkit/browser"
	"github.com/aicloud/gpusuite/internal/web"
)

// holdUpdates makes the pages the tab loads from now on hold the board's
// stream updates while window.holdUpdates is set, until
// window.releaseUpdates() hands them to the board in the order they came;
// window.toggles counts the groups' toggle events. A test can so land a
// real update between a click and the toggle event it queues.
func holdUpdates(t *testing.T, ctx context.Context) {
	t.Helper()
	err := chromedp.Do(ctx, func(ctx context.Context, tg *chromedp.Target) (chromedp.Void, error) {
		_, err := cdp.Call(ctx, tg, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{
			Source: `window.holdUpdates = false; window.heldUpdates = []; window.toggles = 0;
document.addEventListener("toggle", function () { window.toggles++; }, true);
window.releaseUpdates = function () {
  var h = window.heldUpdates; window.heldUpdates = []; window.holdUpdates = false;
  h.forEach(function (f) { f(); });
};
var add = EventSource.prototype.addEventListener;
EventSource.prototype.addEventListener = function (type, fn, opts) {
  if (type !== "board" && type !== "nodes") { return add.call(this, type, fn, opts); }
  return add.call(this, type, function (e) {
    if (window.holdUpdates) { window.heldUpdates.push(function () { fn(e); }); return; }
    fn(e);
  }, opts);
};`})
		return chromedp.Void{}, err
	})
	if err != nil {
		t.Fatalf("hold the board's updates: %v", err)
	}
}

// TestBoardBrowserGroupChoice: on a large board (groups collapsed) a
// stream update that lands after a viewer's click on a group's summary,
// before the click's toggle event, keeps the viewer's choice: the group
// they opened stays open, the one they closed stays closed, and the
// choice is kept for their next visit.
func TestBoardBrowserGroupChoice(t *testing.T) {
	const nodes = 66 // past bigBoard: groups gpu/NVIDIA H100 (gpu000-gpu032) and long/NVIDIA H100
	dir, st := clusterN(t, nodes)
	clk := &clock{t: boardNow}
	src := board.NewSource(board.SourceOptions{LiveDir: dir, Now: clk.now, MaxAge: time.Millisecond,
		Slurm: func(context.Context) (slurmstate.State, error) { return st, nil }})
	src.RefreshSlurm(context.Background())
	srv := newBoardServer(t, web.Options{Board: src, BoardTick: 100 * time.Millisecond})
	ctx := browser.NewBrowser(t, 1440, 1000)
	holdUpdates(t, ctx)
	browser.Do(t, ctx, "board", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#summary"))
	browser.Wait(t, ctx, "stream open", 60*time.Second, `document.getElementById("board").hasAttribute("data-updated")`)
	const group = `document.querySelector('details.group[data-key="gpu/NVIDIA H100"]')`
	const kept = `(localStorage.getItem("gpuacct.board.open") || "").indexOf("gpu/NVIDIA H100") >= 0`
	if !browser.Eval(t, ctx, `!`+group+`.open && !`+kept) {
		t.Fatal("the group is open before the viewer opens it")
	}

	for i, tc := range []struct {
		name string
		open bool // the viewer's choice: the click opens the group, or closes it
	}{
		{"open a closed group", true},
		{"close an opened group", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The group starts the other way, by the viewer's click, kept.
			start := fmt.Sprint(!tc.open)
			browser.Do(t, ctx, "start", chromedp.Evaluate[chromedp.Void](`if (`+group+`.open !== `+start+`) { `+group+`.querySelector("summary").click(); }`))
			browser.Wait(t, ctx, "start kept", 60*time.Second, group+`.open === `+start+` && `+kept+` === `+start)

			// A job starts on one of the group's GPUs; its update is held
			// by the page once it came on the stream.
			browser.Do(t, ctx, "hold", chromedp.Evaluate[chromedp.Void](`window.holdUpdates = true`))
			l := record.Live{Node: "gpu001"}
			for g := range 8 {
				if g%2 == 0 {
					l.GPUs = append(l.GPUs, liveGPU(g, 80, 40960, uint64(1004+g/2)))
				} else {
					l.GPUs = append(l.GPUs, liveGPU(g, 0, 0))
				}
			}
			job := 7000 + i // a different board each time
			l.GPUs[1] = liveGPU(1, 80, 40960, uint64(job))
			writeSnapshot(t, dir, l)
			clk.set(boardNow.Add(time.Duration(i+1) * time.Second))
			browser.Wait(t, ctx, "update held", 60*time.Second, `window.heldUpdates.length > 0`)

			// The click, then the update, in one task: the click's toggle
			// event comes after both.
			browser.Do(t, ctx, "click then update", chromedp.Evaluate[chromedp.Void](`window.toggles = 0;
				`+group+`.querySelector("summary").click(); window.releaseUpdates();`))
			browser.Wait(t, ctx, "update shown", 60*time.Second, fmt.Sprintf(`(" " + document.querySelector('.node[data-node="gpu001"]').getAttribute("data-jobs") + " ").indexOf(" %d ") >= 0`, job))
			browser.Wait(t, ctx, "toggle event", 60*time.Second, `window.toggles > 0`)
			if got := browser.Eval(t, ctx, group+`.open`); got != tc.open {
				t.Errorf("after the update the group is open %v, the viewer chose %v", got, tc.open)
			}
			if got := browser.Eval(t, ctx, kept); got != tc.open {
				t.Errorf("the group is kept open for the next visit %v, the viewer chose %v", got, tc.open)
			}
		})
	}
}
