package demo

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/report"
	rteams "github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/store"
)

// The demo is alive end to end (issue 30): `gpuacct demo`'s weeks end
// now, so the default windows of the reports, report cluster and gpuacct
// check show data and no ingest lag; `demo serve` ingests what its nodes
// ship, so that a job the board shows is found in the ledger, through
// the API and the job page, within a pass; its passes keep check's
// "last successful pass" fresh; when it ends, no job is left running.
func TestDemoAlive(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	o := Defaults()
	o.Dir, o.ClusterDir, o.Weeks = dir, t.TempDir(), 1
	if _, err := Pipeline(ctx, io.Discard, o); err != nil {
		t.Fatal(err)
	}
	db := dir + "/" + dbFile
	checkDefaults(t, db)

	work := t.TempDir()
	sctx, cancel := context.WithCancel(ctx)
	addrs, done := make(chan string, 1), make(chan error, 1)
	began := time.Now()
	go func() {
		done <- Serve(sctx, io.Discard, ServeOptions{Dir: dir, Listen: "127.0.0.1:0", WorkRoot: work, Ready: func(a string) { addrs <- a }})
	}()
	// A failing test ends serve before its directories are removed.
	ended := false
	t.Cleanup(func() {
		if !ended {
			cancel()
			<-done
		}
	})
	var addr string
	select {
	case addr = <-addrs:
	case err := <-done:
		ended = true
		t.Fatalf("serve ended before serving: %v", err)
	case <-time.After(time.Minute):
		t.Fatal("the board was not served within a minute")
	}
	// Every job the board first shows, and one started after, answers
	// on the API and its page, within a deadline far above a pass.
	first := jobIDs(getBoard(t, addr))
	if len(first) == 0 {
		t.Fatal("no job on the board")
	}
	highest := first[len(first)-1]
	pending := map[string]bool{}
	for _, id := range first {
		pending[id] = true
	}
	later := ""
	deadline := time.Now().Add(2 * time.Minute)
	for len(pending) > 0 || later == "" {
		if time.Now().After(deadline) {
			t.Fatalf("after 2 minutes, jobs of the board not in the ledger: %v; a job started after %s found: %v", pending, highest, later != "")
		}
		select {
		case err := <-done:
			ended = true
			t.Fatalf("serve ended: %v", err)
		case <-time.After(250 * time.Millisecond):
		}
		for _, id := range jobIDs(getBoard(t, addr)) {
			if later == "" && numeric(id) > numeric(highest) {
				pending[id] = true
				later = id
			}
		}
		for id := range pending {
			if status(t, addr, "/api/v1/jobs/demo/"+id) == http.StatusOK && status(t, addr, "/job/demo/"+id) == http.StatusOK {
				delete(pending, id)
			}
		}
	}
	// serve's own passes are recorded: check's lag is of them.
	st, err := store.Open(ctx, store.Options{Path: db, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if last, err := st.LastGoodPass(ctx); err != nil || last == nil || *last < began.Unix() {
		t.Errorf("last good pass %v (%v), want one after serve began at %d", last, err, began.Unix())
	}

	cancel()
	select {
	case err := <-done:
		ended = true
		if err != nil {
			t.Fatalf("serve ended with %v", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("serve still running 2 minutes after its context ended")
	}
	var open []int64
	err = st.Jobs(ctx, store.JobsQuery{From: 0, To: math.MaxInt64}, func(j *store.JobRow) bool {
		if j.End == nil {
			open = append(open, j.JobID)
		}
		return true
	})
	if err != nil || len(open) > 0 {
		t.Errorf("jobs left running in the ledger after serve ended: %v (%v)", open, err)
	}
	checkDefaults(t, db)
}

// checkDefaults holds the ledger's default windows to having data: the
// teams report of the last 7 days, report cluster's capacity over them,
// and gpuacct check without a problem; and nothing was quarantined.
func checkDefaults(t *testing.T, path string) {
	t.Helper()
	if q, _ := filepath.Glob(filepath.Join(filepath.Dir(path), "quarantine", "*", "*")); len(q) > 0 {
		var why []string
		for _, f := range q {
			if strings.HasSuffix(f, ".reason") {
				b, _ := os.ReadFile(f)
				why = append(why, filepath.Base(f)+": "+strings.TrimSpace(string(b)))
			}
		}
		t.Errorf("the demo quarantined %d files: %s", len(q), strings.Join(why, "; "))
	}
	ctx := context.Background()
	db, err := report.OpenDB(ctx, path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := time.Now()
	win, err := timespec.Resolve("", "", now, time.Local)
	if err != nil {
		t.Fatal(err)
	}
	tb, err := db.Report(ctx, report.Request{Kind: "teams", Window: win, Mapping: &rteams.Mapping{}})
	if err != nil {
		t.Fatal(err)
	}
	if len(tb.Rows) == 0 {
		t.Errorf("report teams over the default window %s – %s has no row: %v", win.Start, win.End, tb.Notes)
	}
	scope, err := db.Scope(report.ScopeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := db.ClusterUtilization(ctx, report.ClusterRequest{Window: report.HourWindow(win), Scope: scope, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) == 0 || rows[0].Reported == 0 {
		t.Errorf("report cluster over the default window: no capacity recorded: %+v", rows)
	}
	cfg := config.Default()
	o := report.CheckOptionsFrom(cfg, now)
	o.Incoming, o.Quarantine = "", ""
	problems, summary, err := db.Check(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) > 0 {
		t.Errorf("check on the demo: %s\n%s", summary, strings.Join(problems, "\n"))
	}
}

// jobIDs are the jobs on the board, in increasing order.
func jobIDs(d board.StatusDoc) []string {
	seen := map[uint64]bool{}
	var ids []uint64
	for _, n := range d.Nodes {
		for _, g := range n.GPUs {
			for _, j := range g.Jobs {
				if id := j.Job; !seen[id] {
					seen[id] = true
					ids = append(ids, id)
				}
			}
		}
	}
	slices.Sort(ids)
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = strconv.FormatUint(id, 10)
	}
	return out
}

// status is the HTTP status of GET path.
func status(t *testing.T, addr, path string) int {
	t.Helper()
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + addr + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b bytes.Buffer
	_, _ = io.Copy(&b, io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode
}

func numeric(id string) uint64 {
	n, _ := strconv.ParseUint(id, 10, 64)
	return n
}
