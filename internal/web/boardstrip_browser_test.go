package web_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/testkit/browser"
	"github.com/aicloud/gpusuite/internal/web"
)

// feedHour runs a source over snapshots of node s1 for the hour before
// end, one every 10 s on a moving clock, GPU 0 held by job 42 (alice, 80
// %) for the ten minutes from 20 to 10 minutes before end and free
// otherwise; GPU 1 a MIG GPU of a busy 3g.40gb (job 5, bob) and a free
// 1g.10gb. It returns the source, its clock at end.
func feedHour(t testing.TB, end time.Time) *board.Source {
	t.Helper()
	dir := t.TempDir()
	c := &clock{t: end.Add(-time.Hour)}
	st := slurmstate.State{Nodes: []slurmstate.Node{slurmNode("s1", slurmstate.Mixed, 3, "gpu")}}
	src := board.NewSource(board.SourceOptions{LiveDir: dir, Now: c.now, MaxAge: time.Second,
		Slurm: func(context.Context) (slurmstate.State, error) { st.At = c.now(); return st, nil }})
	src.RefreshSlurm(context.Background())
	jobFrom, jobTo := end.Add(-20*time.Minute), end.Add(-10*time.Minute)
	for at := end.Add(-time.Hour); !at.After(end); at = at.Add(10 * time.Second) {
		g0 := liveGPU(0, 3, 0)
		if !at.Before(jobFrom) && at.Before(jobTo) {
			g0 = liveGPU(0, 80, 20480, 42)
			g0.Jobs[0].User = "alice"
		}
		mig := func(uuid, profile string, util uint32, jobs ...uint64) record.LiveGPU {
			g := liveGPU(1, util, 1024, jobs...)
			g.UUID, g.Model = uuid, "NVIDIA A100-SXM4-80GB MIG "+profile
			return g
		}
		parent := record.LiveGPU{Index: 1, UUID: "GPU-s1-1", Model: "NVIDIA A100-SXM4-80GB"}
		writeSnapshot(t, dir, record.Live{Node: "s1", Time: at, GPUs: []record.LiveGPU{g0, parent,
			mig("MIG-s1-a", "3g.40gb", 60, 5), mig("MIG-s1-b", "1g.10gb", 0)}})
		c.set(at.Add(time.Second))
		src.Current(context.Background())
	}
	return src
}

// TestBoardStripBrowser: a GPU that ran a known job for ten minutes shows
// it in its strip in Chromium, as ten marks in one span naming the job,
// in the cell and in its focus detail; the MIG GPU shows its slices with
// their profiles and states, the summary the free slice; each cell's
// detail links to booking it.
func TestBoardStripBrowser(t *testing.T) {
	end := boardNow.Truncate(time.Minute)
	src := feedHour(t, end)
	srv := newBoardServer(t, web.Options{Board: src, Now: func() time.Time { return end.Add(time.Second) }})
	ctx, shots := browser.NewBrowser(t, 1440, 1000), browser.ShotDir(t)
	watchCSP(t, ctx)
	browser.Do(t, ctx, "board", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#gpu-s1-0"))
	// The stream's first board replaces every cell: a query of a cell
	// before it may act on a node gone from the page. Once it is in, the
	// fixed clock sends no other.
	browser.Wait(t, ctx, "stream's board", 2*time.Minute, `document.getElementById("board").hasAttribute("data-updated")`)

	runs := browser.Value[[]string](t, ctx, `Array.from(document.querySelectorAll("#gpu-s1-0 > .strip > span")).map(function (s) {
		return s.title + "=" + s.textContent.length; })`)
	var job string
	for _, r := range runs {
		if strings.Contains(r, "job 42") {
			job = r
		}
	}
	if want := "job 42 alice · mean 80 %=10"; !strings.HasSuffix(job, want) {
		t.Errorf("the strip's runs %q: none ends %q", runs, want)
	}
	if !browser.Eval(t, ctx, `document.querySelector("#gpu-s1-0 > .strip").getBoundingClientRect().height > 4`) {
		t.Error("the cell's strip has no height")
	}
	// Focused in the page, by id, in one evaluation: no node id to go
	// stale between a query and DevTools' focus.
	if !browser.Eval(t, ctx, `(function (el) { el.focus(); return document.activeElement === el; })(document.getElementById("gpu-s1-0"))`) {
		t.Fatal("GPU 0's cell takes no focus")
	}
	browser.Shot(t, ctx, shots, "board-strip.png")
	if got := browser.Text(t, ctx, "#gpu-s1-0 .tip .run"); !strings.Contains(got, "job 42 alice") {
		t.Errorf("the focused cell's detail says %q, want job 42 alice", got)
	}
	if got := browser.Value[string](t, ctx, `document.querySelector("#gpu-s1-0 .tip a.book").getAttribute("href")`); got != "/book?node=s1&gpu=0" {
		t.Errorf("the detail's booking link is %q", got)
	}
	slices := browser.Text(t, ctx, "#gpu-s1-1 .slices")
	for _, want := range []string{"3g.40gb", "1g.10gb"} {
		if !strings.Contains(slices, want) {
			t.Errorf("the MIG GPU's slices read %q, lacking %q", slices, want)
		}
	}
	if got := browser.Text(t, ctx, "#free-slices"); !strings.Contains(got, "1g.10gb") || !strings.Contains(got, "s1(1)") {
		t.Errorf("the free slices table reads %q", got)
	}
}

// TestBoardStripFirstRender is the first render of a 1,000-GPU board in
// Chromium with an hour of strips beside the same board without them,
// in one browser: logged for docs/performance.md (a ratio, not asserted
// on a shared machine). A page that never renders fails in firstRender;
// no time is asserted, as a loaded machine's render takes any time.
func TestBoardStripFirstRender(t *testing.T) {
	dir, st := clusterN(t, 125)
	serve := func(strips bool) string {
		src, now := stripSource(dir, st, 125, strips)
		return newBoardServer(t, web.Options{Board: src, Now: now}).URL
	}
	plain, strips := serve(false), serve(true)
	ctx := browser.NewBrowser(t, 1440, 1000)
	firstRender(t, ctx, plain) // warms the browser and the static files
	msPlain := firstRender(t, ctx, plain)
	msStrips := firstRender(t, ctx, strips)
	t.Logf("first render of 1000 GPUs: without strips %.0f ms, with an hour of strips %.0f ms, ratio %.2f", msPlain, msStrips, msStrips/msPlain)
	if !browser.Eval(t, ctx, `document.querySelector("#gpu-gpu000-0").title.indexOf("last hour ") >= 0`) {
		t.Error("a compact cell's title lacks its last hour")
	}
}
