package web_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestBoardQueue: the board's page shows Slurm's queue as last read,
// per partition × model with the oldest's wait and Slurm's estimated
// start; a failed read keeps the last answer; without a queue the page
// has no table.
func TestBoardQueue(t *testing.T) {
	lb := newLiveBoard(t, nil)
	answer := slurmstate.Queue{At: boardNow, Rows: []slurmstate.QueueRow{
		{Partition: "gpu", Model: "h100", Jobs: 2, GPUs: 9, Oldest: boardNow.Add(-(75 * time.Minute)), NextStart: boardNow.Add(3 * time.Hour)},
		{Partition: "long", Model: slurmstate.AnyModel, Jobs: 1, GPUs: 1, Oldest: boardNow.Add(-40 * time.Second)},
	}}
	var readErr error
	q := web.NewQueue(func(context.Context) (slurmstate.Queue, error) { return answer, readErr }, slog.New(slog.DiscardHandler))
	with := newBoardServer(t, web.Options{Board: lb.src, Queue: q})
	without := newBoardServer(t, web.Options{Board: lb.src})
	page := func(base string) string {
		t.Helper()
		c := &http.Client{Timeout: 30 * time.Second}
		resp, err := c.Get(base + "/")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		return string(b)
	}

	if got := page(with.URL); strings.Contains(got, `id="board-queue"`) {
		t.Errorf("the page shows a queue before the first read")
	}
	if err := q.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	readErr = errors.New("squeue: no answer in time")
	if err := q.Refresh(context.Background()); err == nil {
		t.Fatal("a failed read reported no error")
	}
	got := page(with.URL)
	for _, want := range []string{
		`<tr><td>gpu</td><td>h100</td><td class="num">2</td><td class="num">9</td><td>1h 15m</td><td>2026-11-26 09:00</td></tr>`,
		`<tr><td>long</td><td>any</td><td class="num">1</td><td class="num">1</td><td>40s</td><td>–</td></tr>`,
		`Slurm's queue at 2026-11-26 06:00.`,
	} {
		if !strings.Contains(got, want) {
			t.Errorf("the board's page lacks %s", want)
		}
	}
	if got := page(without.URL); strings.Contains(got, `id="board-queue"`) {
		t.Errorf("a board without a queue shows one")
	}
}

// TestBoardQueueStarted: beside Slurm's queue the board shows, per GPU
// model and count, the median wait from submit to start of the runs that
// started over the last 7 days, read from the ledger in the background
// (the page never waits on it); a run sacct gave no submit does not count.
func TestBoardQueueStarted(t *testing.T) {
	l := ledgerdb.NewLedger(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	// job id → start before boardNow, wait (0: no submit).
	runs := []struct {
		id          uint64
		gpus        int
		ago, waited time.Duration
	}{{1, 2, 30 * time.Hour, 4 * time.Minute}, {2, 2, 20 * time.Hour, 10 * time.Minute}, {3, 2, 10 * time.Hour, time.Hour}, {4, 2, 5 * time.Hour, 0}, {5, 8, 3 * time.Hour, 90 * time.Second}}
	b, err := st.Begin(ctx, boardNow)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range runs {
		for _, k := range []record.Kind{record.JobStart, record.JobEnd} {
			e := &record.Event{Schema: record.EventSchema, Kind: k, Time: boardNow.Add(-r.ago), Cluster: "c1", Node: "n1"}
			if k == record.JobEnd {
				e.Time = e.Time.Add(time.Hour)
			}
			e.Job.ID, e.Job.User, e.Job.Account, e.Job.Partition = r.id, "ann", "physics", "gpu"
			for i := range r.gpus {
				e.Job.GPUs = append(e.Job.GPUs, i)
				e.GPUs = append(e.GPUs, record.GPU{Minor: i, Model: "H100"})
			}
			e.Key = record.EventKey("c1", r.id, 0, "n1", k)
			if err := b.Event(e); err != nil {
				t.Fatal(err)
			}
		}
	}
	todo, err := b.Unreconciled(0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range todo {
		for _, r := range runs {
			if r.id != j.JobID {
				continue
			}
			tm := store.SlurmTimes{Start: boardNow.Add(-r.ago), End: boardNow.Add(-r.ago + time.Hour), State: "completed"}
			if r.waited > 0 {
				tm.Submit = tm.Start.Add(-r.waited)
			}
			if err := b.Reconcile(j.Row, tm); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	q := web.NewQueue(func(context.Context) (slurmstate.Queue, error) { return slurmstate.Queue{At: boardNow}, nil }, slog.New(slog.DiscardHandler))
	if err := q.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	srv := newBoardServer(t, web.Options{Board: newLiveBoard(t, nil).src, DB: l.Loc(), Queue: q})
	want := []string{
		`<tr><td>H100</td><td class="num">2</td><td class="num">3</td><td>10m 00s</td></tr>`,
		`<tr><td>H100</td><td class="num">8</td><td class="num">1</td><td>1m 30s</td></tr>`,
	}
	// The first page starts the read; poll until a page shows it.
	var got string
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); <-tick.C {
		resp, err := (&http.Client{Timeout: 30 * time.Second}).Get(srv.URL + "/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		resp.Body.Close()
		if got = string(body); strings.Contains(got, `id="queue-started"`) {
			break
		}
	}
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("the board's page lacks %s", w)
		}
	}
	// in Japanese, the same table speaks it
	req, err := http.NewRequest(http.MethodGet, srv.URL+"/", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept-Language", "ja")
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	resp.Body.Close()
	// the queue's section alone: the page also carries the catalogue,
	// English keys and all, for board.js
	_, body, ok := strings.Cut(string(page), `id="board-queue"`)
	if !ok {
		t.Fatalf("no queue on the Japanese page:\n%.3000s", page)
	}
	body, _, _ = strings.Cut(body, `</section>`)
	for _, w := range []string{"開始までの時間(投入から開始までの待ちの中央値、直近7日間)", "<th class=\"num\">要求GPU数</th>", want[0]} {
		if !strings.Contains(body, w) {
			t.Errorf("the board's page in Japanese lacks %s", w)
		}
	}
	for _, en := range []string{"Started within", "GPUs asked"} {
		if strings.Contains(body, en) {
			t.Errorf("the board's page in Japanese still says %q", en)
		}
	}
}
