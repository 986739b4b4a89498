package slurmstate

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// squeueFormat is what Queue asks squeue for, one pending job a line:
// the request per node (--gres) and per job (--gpus) both, since a job
// names its GPUs either way. The "|" suffix parts the fields; no field
// Slurm prints can hold one.
const squeueFormat = "JobID:|,Partition:|,tres-per-node:|,tres-per-job:|,NumNodes:|,SubmitTime:|,StartTime:"

// maxPending bounds the pending jobs one Queue parses: past it, the
// rest are counted in Queue.Unread, never held.
const maxPending = 100_000

// AnyModel is the model of a request that names no GPU type.
const AnyModel = "any"

// Pending is one pending job that asks for GPUs.
type Pending struct {
	Job       string
	Partition string
	// Model is the GPU type asked for, AnyModel when none is named.
	Model string
	// GPUs is how many the job asks for in all.
	GPUs   int
	Submit time.Time
	// Start is Slurm's estimated start (squeue --start); zero when the
	// scheduler has none yet.
	Start time.Time
}

// QueueRow is the pending jobs of one partition × model.
type QueueRow struct {
	Partition string    `json:"partition"`
	Model     string    `json:"model"`
	Jobs      int       `json:"jobs"`
	GPUs      int       `json:"gpus"`
	Oldest    time.Time `json:"oldest_submit,omitzero"`
	// NextStart is the earliest of Slurm's estimated starts; zero when
	// it has none.
	NextStart time.Time `json:"next_start,omitzero"`
}

// Queue is what waits for GPUs, as Slurm had it at At.
type Queue struct {
	At   time.Time  `json:"at"`
	Rows []QueueRow `json:"rows"`
	// Unread is how many pending lines past maxPending were not read.
	Unread int `json:"unread,omitempty"`
	// Waits is how long jobs that asked for GPUs waited to start over
	// WaitWindow, from the ledger (its readers fill it: Slurm's queue
	// says nothing of the jobs that left it); none without a ledger.
	Waits []Wait `json:"started_within,omitempty"`
}

// WaitWindow is how far back Waits looks: a week holds a weekday's
// and a weekend's queue.
const WaitWindow = 7 * 24 * time.Hour

// Wait is the median wait, from submit to start, of the Jobs runs
// that asked for GPUs GPUs of Model and started over WaitWindow.
type Wait struct {
	Model string `json:"model"`
	GPUs  int64  `json:"gpus"`
	Jobs  int    `json:"jobs"`
	// MedianS is the median wait in seconds.
	MedianS int64 `json:"median_wait_s"`
}

// Queue reads the pending jobs that ask for GPUs through squeue, bounded
// as Read is (time, output), and sums them per partition × model.
func (r Reader) Queue(ctx context.Context) (Queue, error) {
	ctx, cancel, loc := r.bounded(ctx)
	defer cancel()
	out, err := r.run(ctx, "squeue", "--noheader", "--array", "--states=PENDING", "--Format="+squeueFormat)
	if err != nil {
		return Queue{}, fmt.Errorf("read slurm queue: %w", err)
	}
	jobs, unread, err := ParsePending(out, loc)
	if err != nil {
		return Queue{}, err
	}
	return Queue{At: r.now(), Rows: SumQueue(jobs), Unread: unread}, nil
}

// ParsePending reads squeueFormat's lines, keeping the jobs that ask for
// GPUs, at most maxPending; unread counts the lines past it.
func ParsePending(out []byte, loc *time.Location) (jobs []Pending, unread int, err error) {
	for line := range bytes.Lines(out) {
		s := strings.TrimSpace(string(line))
		if s == "" {
			continue
		}
		if len(jobs) == maxPending {
			unread++
			continue
		}
		f := strings.Split(s, "|")
		if len(f) != 7 {
			return nil, 0, fmt.Errorf("squeue line %q: %d fields, want 7", clip(s), len(f))
		}
		model, perNode := gpuRequest(f[2])
		jobModel, perJob := gpuRequest(f[3])
		nodes, _ := strconv.Atoi(strings.TrimSpace(f[4]))
		gpus := perJob
		if gpus == 0 {
			gpus = perNode * max(nodes, 1)
		} else {
			model = jobModel
		}
		if gpus == 0 {
			continue
		}
		p := Pending{Job: strings.TrimSpace(f[0]), Partition: strings.TrimSpace(f[1]), Model: model, GPUs: gpus}
		if p.Submit, err = parseTime(strings.TrimSpace(f[5]), loc); err != nil {
			return nil, 0, fmt.Errorf("squeue job %s submit: %w", p.Job, err)
		}
		if p.Start, err = parseTime(strings.TrimSpace(f[6]), loc); err != nil {
			return nil, 0, fmt.Errorf("squeue job %s start: %w", p.Job, err)
		}
		jobs = append(jobs, p)
	}
	return jobs, unread, nil
}

// gpuRequest is the GPU type and count of a TRES request as squeue
// prints it: "gres:gpu:a100:2", "gres/gpu:2", "gres:gpu:2,gres:shard:1";
// 0 when it asks for no GPU.
func gpuRequest(s string) (model string, n int) {
	model = AnyModel
	for _, item := range strings.Split(strings.TrimSpace(s), ",") {
		item = strings.TrimPrefix(strings.TrimPrefix(item, "gres:"), "gres/")
		parts := strings.Split(item, ":")
		if parts[0] != "gpu" || len(parts) < 2 {
			continue
		}
		count, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil {
			count = 1 // gpu:TYPE asks for one
			if len(parts) == 2 {
				model = parts[1]
			}
		} else if len(parts) >= 3 {
			model = parts[1]
		}
		n += count
	}
	return model, n
}

// SumQueue is the jobs per partition × model, by partition then model.
func SumQueue(jobs []Pending) []QueueRow {
	idx := map[[2]string]int{}
	var rows []QueueRow
	for _, j := range jobs {
		k := [2]string{j.Partition, j.Model}
		i, ok := idx[k]
		if !ok {
			i = len(rows)
			idx[k] = i
			rows = append(rows, QueueRow{Partition: j.Partition, Model: j.Model})
		}
		r := &rows[i]
		r.Jobs++
		r.GPUs += j.GPUs
		if !j.Submit.IsZero() && (r.Oldest.IsZero() || j.Submit.Before(r.Oldest)) {
			r.Oldest = j.Submit
		}
		if !j.Start.IsZero() && (r.NextStart.IsZero() || j.Start.Before(r.NextStart)) {
			r.NextStart = j.Start
		}
	}
	slices.SortFunc(rows, func(a, b QueueRow) int {
		return cmp.Or(cmp.Compare(a.Partition, b.Partition), cmp.Compare(a.Model, b.Model))
	})
	return rows
}
