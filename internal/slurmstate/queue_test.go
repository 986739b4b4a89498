package slurmstate

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestGPURequest(t *testing.T) {
	for _, tc := range []struct {
		in    string
		model string
		n     int
	}{
		{"gres:gpu:a100:2", "a100", 2},
		{"gres/gpu:4", AnyModel, 4},
		{"gres:gpu:h100", "h100", 1},
		{"gres:gpu:2,gres:shard:1", AnyModel, 2},
		{"gres:shard:1", AnyModel, 0},
		{"N/A", AnyModel, 0},
		{"", AnyModel, 0},
	} {
		t.Run(tc.in, func(t *testing.T) {
			model, n := gpuRequest(tc.in)
			if model != tc.model || n != tc.n {
				t.Errorf("gpuRequest(%q) = %q, %d; want %q, %d", tc.in, model, n, tc.model, tc.n)
			}
		})
	}
}

func TestParsePendingAndSum(t *testing.T) {
	out := strings.Join([]string{
		"11|gpu|gres:gpu:a100:2|N/A|2|2026-11-28T10:00:00|2026-11-28T13:00:00",
		"12|gpu|N/A|gres:gpu:a100:3|1|2026-11-28T09:30:00|N/A",
		"13|gpu|N/A|N/A|1|2026-11-28T09:00:00|N/A", // asks for no GPU
		"14|long|gres:gpu:1|N/A|1|2026-11-28T11:00:00|2026-11-28T12:30:00",
		"",
	}, "\n")
	jobs, unread, err := ParsePending([]byte(out), time.UTC)
	if err != nil || unread != 0 {
		t.Fatalf("ParsePending: %v, %d unread", err, unread)
	}
	at := func(s string) time.Time { tm, _ := time.Parse(time.RFC3339, s); return tm }
	want := []QueueRow{
		{Partition: "gpu", Model: "a100", Jobs: 2, GPUs: 7, Oldest: at("2026-11-28T09:30:00Z"), NextStart: at("2026-11-28T13:00:00Z")},
		{Partition: "long", Model: AnyModel, Jobs: 1, GPUs: 1, Oldest: at("2026-11-28T11:00:00Z"), NextStart: at("2026-11-28T12:30:00Z")},
	}
	if d := cmp.Diff(want, SumQueue(jobs)); d != "" {
		t.Errorf("queue (-want +got):\n%s", d)
	}

	if _, _, err := ParsePending([]byte("1|gpu|gres:gpu:1\n"), time.UTC); err == nil {
		t.Error("a short line parsed")
	}
}

// TestQueueBounded: past maxPending lines are counted, not held, and a
// squeue that does not answer ends at the reader's deadline.
func TestQueueBounded(t *testing.T) {
	var b strings.Builder
	for i := range maxPending + 5 {
		fmt.Fprintf(&b, "%d|gpu|gres:gpu:1|N/A|1|2026-11-28T10:00:00|N/A\n", i)
	}
	r := Reader{Run: func(context.Context, string, ...string) ([]byte, error) { return []byte(b.String()), nil }}
	q, err := r.Queue(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if q.Unread != 5 || len(q.Rows) != 1 || q.Rows[0].Jobs != maxPending {
		t.Errorf("queue of %d lines: %d unread, rows %+v; want 5 unread, %d jobs", maxPending+5, q.Unread, q.Rows, maxPending)
	}

	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	hung := Reader{Timeout: 50 * time.Millisecond, Run: func(context.Context, string, ...string) ([]byte, error) {
		<-release // answers after the test, as a hung slurmctld
		return nil, nil
	}}
	if _, err := hung.Queue(context.Background()); err == nil || !strings.Contains(err.Error(), "no answer in time") {
		t.Errorf("hung squeue: %v, want no answer in time", err)
	}
}
