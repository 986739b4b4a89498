package slurm_test

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/testkit/browser"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
	"github.com/aicloud/gpusuite/internal/testkit/snapshot"
	"github.com/aicloud/gpusuite/internal/web"
)

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time  { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *testClock) set(t time.Time) { c.mu.Lock(); defer c.mu.Unlock(); c.t = t }

// TestBoardStripSlurm: a real job of alice's on the harness's Slurm,
// held for ten minutes on GPU 0 of its node in the snapshots the test
// writes as the node's agent would, on a clock the test moves, shows in
// the board's last-hour strip in Chromium: ten marks in one span naming
// the job Slurm gave and its user, in the cell and its focus detail; the
// board reads Slurm's real view of the node.
func TestBoardStripSlurm(t *testing.T) {
	c := slurm.Get(t)
	browser.Require(t)
	slurm.EnsureUser(t, "alice")
	node := c.Path("GPUSUITE_SLURM_NODE")
	job := c.Sbatch(t, "alice", "-A", "team-a", "--gres=gpu:1", "--wrap", "sleep 300")
	t.Cleanup(func() { cancelJobs(c, []uint64{job}) })
	c.WaitState(t, job, "RUNNING", 2*time.Minute)

	dir := t.TempDir()
	end := time.Now().Truncate(time.Minute)
	clk := &testClock{t: end.Add(-15 * time.Minute)}
	src := board.NewSource(board.SourceOptions{LiveDir: dir, Now: clk.now, MaxAge: time.Second,
		Slurm: slurmstate.Reader{Run: slurmstate.Exec{Env: c.Env()}.Run, Timeout: 10 * time.Second}.Read})
	src.RefreshSlurm(context.Background())
	from, to := end.Add(-12*time.Minute), end.Add(-2*time.Minute)
	util, mem, total := uint32(75), uint64(20480), uint64(81920)
	for at := clk.now(); !at.After(end); at = at.Add(10 * time.Second) {
		g := record.LiveGPU{Index: 0, UUID: "GPU-strip-0", Model: "NVIDIA A100", Util: &util, MemUsedMiB: &mem, MemTotalMiB: &total}
		if !at.Before(from) && at.Before(to) {
			g.Jobs = []record.LiveJob{{Job: job, User: "alice", Account: "team-a"}}
		}
		snapshot.Write(t, dir, record.Live{Schema: record.LiveSchema, Cluster: "test", Node: node, Time: at, Interval: 10,
			GPUs: []record.LiveGPU{g}})
		clk.set(at.Add(time.Second))
		src.Current(context.Background())
	}
	h, err := web.New(web.Options{DB: filepath.Join(t.TempDir(), "none.db"), Board: src, Location: time.UTC, Now: clk.now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	hs := httptest.NewServer(h)
	t.Cleanup(hs.Close)

	ctx := browser.NewBrowser(t, 1440, 1000)
	cell := fmt.Sprintf("#gpu-%s-0", node)
	browser.Do(t, ctx, "board", chromedp.Navigate(hs.URL+"/"), chromedp.WaitVisible(cell))
	runs := browser.Value[[]string](t, ctx, `Array.from(document.querySelectorAll("`+cell+` > .strip > span")).map(function (s) {
		return s.title + "=" + s.textContent.length; })`)
	name := fmt.Sprintf("job %d alice", job)
	found := false
	for _, r := range runs {
		found = found || (strings.Contains(r, name) && strings.HasSuffix(r, "=10"))
	}
	if !found {
		t.Errorf("the strip's runs %q: none is %s for ten minutes", runs, name)
	}
	browser.Do(t, ctx, "focus the cell", chromedp.Focus(cell))
	if got := browser.Text(t, ctx, cell+" .tip .run"); !strings.Contains(got, name) {
		t.Errorf("the focused cell's detail says %q, want %s", got, name)
	}
	if got := browser.Text(t, ctx, cell+" .st"); strings.Contains(got, "stale") {
		t.Errorf("the cell reads %q: the board did not take the snapshots", got)
	}
}
