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

	"github.com/aicloud/gpusuite/internal/slurmstate"
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
