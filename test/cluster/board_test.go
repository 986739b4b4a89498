package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/testkit/browser"
)

// TestBoardAcrossServers: the live board of serve on the head (its API,
// its page in a browser, and gpuacct status there) shows every server's four GPUs; a job on one server as its
// GPUs held by that job; a server drained in Slurm as drained; a server
// whose agent went silent as stale, never free; and all free again once
// the server is resumed and the agent runs on.
func TestBoardAcrossServers(t *testing.T) {
	m := get(t)
	drained, silent, busy := m.nodes[0], m.nodes[1], m.nodes[2]
	waitBoard(t, m, "every server's GPUs free", func(doc board.StatusDoc) (bool, string) {
		return states(doc, m.nodes) == strings.Repeat("free free free free | ", len(m.nodes)), states(doc, m.nodes)
	})

	id := m.Sbatch(t, "carol", "-A", "team-c", "-w", busy, "--gres=gpu:2", "--time=5", "--wrap", "sleep 120")
	t.Cleanup(func() { m.quiet("scancel", fmt.Sprint(id)) })
	m.Run(t, "", "scontrol", "update", "nodename="+drained, "state=drain", "reason=cluster test")
	t.Cleanup(func() {
		// Quietly: the test resumes it itself unless it failed first.
		m.quiet("scontrol", "update", "nodename="+drained, "state=resume")
	})
	agent := agentPID(t, m, silent)
	if err := syscall.Kill(agent, syscall.SIGSTOP); err != nil {
		t.Fatalf("stop the agent of %s: %v", silent, err)
	}
	t.Cleanup(func() { _ = syscall.Kill(agent, syscall.SIGCONT) })

	check := func(doc board.StatusDoc) (bool, string) {
		var held int
		for _, n := range doc.Nodes {
			if n.Name != busy {
				continue
			}
			for _, g := range n.GPUs {
				for _, j := range g.Jobs {
					if j.Job == id && j.User == "carol" && (g.State == board.Busy || g.State == board.Idle) {
						held++
					}
				}
			}
		}
		want := fmt.Sprintf("drained drained drained drained | stale stale stale stale | %s", heldStates(doc, busy))
		got := states(doc, []string{drained, silent, busy})
		return held == 2 && strings.HasPrefix(got, want) && doc.Totals.StaleNodes == 1 && doc.Totals.Free == 2,
			fmt.Sprintf("%s; %d GPUs of job %d; %d stale nodes; %d free", got, held, id, doc.Totals.StaleNodes, doc.Totals.Free)
	}
	waitBoard(t, m, "drained, stale and busy servers", check)
	// gpuacct status on the head reads the same live files and Slurm.
	var doc board.StatusDoc
	decode(t, m.gpuacctRun(t, "status", "--format", "json"), &doc)
	if ok, why := check(doc); !ok {
		t.Errorf("gpuacct status: %s", why)
	}
	// And the dashboard's board page, in a browser, cell by cell.
	ctx := browser.NewBrowser(t, 1280, 1100)
	if err := chromedp.Do(ctx, chromedp.Navigate(m.serve+"/"), chromedp.WaitVisible("#board")); err != nil {
		t.Fatalf("open the board page: %v", err)
	}
	waitUntil(t, "the board page shows the drained, stale and busy servers", time.Minute, func() (bool, string) {
		doc := m.boardDoc(t)
		want, got := states(doc, m.nodes), pageStates(t, ctx, doc, m.nodes)
		return want == got && strings.HasPrefix(got, "drained drained drained drained | stale stale stale stale | "), "page " + got + "; API " + want
	})
	browser.Shot(t, ctx, browser.ShotDir(t), "cluster-board.png")

	m.Run(t, "", "scancel", fmt.Sprint(id))
	m.Run(t, "", "scontrol", "update", "nodename="+drained, "state=resume")
	if err := syscall.Kill(agent, syscall.SIGCONT); err != nil {
		t.Fatalf("continue the agent of %s: %v", silent, err)
	}
	waitBoard(t, m, "every server's GPUs free again", func(doc board.StatusDoc) (bool, string) {
		return states(doc, m.nodes) == strings.Repeat("free free free free | ", len(m.nodes)), states(doc, m.nodes)
	})
}

// waitBoard polls serve's board until cond holds (serve re-reads Slurm
// every board.slurm_interval, the agents write every second).
func waitBoard(t *testing.T, m *cl, what string, cond func(board.StatusDoc) (bool, string)) {
	t.Helper()
	waitUntil(t, "board: "+what, time.Minute, func() (bool, string) { return cond(m.boardDoc(t)) })
}

// states is the board's GPU states of the nodes, in index order, each
// node's followed by " | ".
func states(doc board.StatusDoc, nodes []string) string {
	var b strings.Builder
	for _, name := range nodes {
		found := false
		for _, n := range doc.Nodes {
			if n.Name != name {
				continue
			}
			found = true
			for i, g := range n.GPUs {
				if i > 0 {
					b.WriteString(" ")
				}
				b.WriteString(string(g.State))
			}
		}
		if !found {
			b.WriteString(name + " missing")
		}
		b.WriteString(" | ")
	}
	return b.String()
}

// heldStates is the node's GPU states as they must read with two GPUs
// held by a job: whatever the two held read (busy or idle), the rest free.
func heldStates(doc board.StatusDoc, node string) string {
	var parts []string
	for _, n := range doc.Nodes {
		if n.Name != node {
			continue
		}
		for _, g := range n.GPUs {
			if len(g.Jobs) > 0 {
				parts = append(parts, string(g.State))
			} else {
				parts = append(parts, "free")
			}
		}
	}
	return strings.Join(parts, " ")
}

// agentPID is the pid of the node's agent (the harness's pid file).
func agentPID(t *testing.T, m *cl, node string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(m.Path("GPUSUITE_SLURM_DIR"), "nodes", node, "agent.pid"))
	if err != nil {
		t.Fatalf("the agent of %s: %v", node, err)
	}
	return atoi[int](string(b))
}

// pageStates reads the board page's cells of the nodes' GPUs (as states
// does the API's): the last word of each cell's state line.
func pageStates(t *testing.T, ctx context.Context, doc board.StatusDoc, nodes []string) string {
	t.Helper()
	var b strings.Builder
	for _, name := range nodes {
		for _, n := range doc.Nodes {
			if n.Name != name {
				continue
			}
			for i := range n.GPUs {
				js := fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.textContent.trim().split(/\s+/).pop() : "missing"; })()`,
					fmt.Sprintf("#gpu-%s-%d .st", name, n.GPUs[i].Index))
				w, err := chromedp.Run(ctx, chromedp.Evaluate[string](js))
				if err != nil {
					t.Fatalf("read the page's cell of %s GPU %d: %v", name, i, err)
				}
				if i > 0 {
					b.WriteString(" ")
				}
				b.WriteString(w)
			}
		}
		b.WriteString(" | ")
	}
	return b.String()
}
