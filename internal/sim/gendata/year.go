package gendata

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
)

// YearOptions size a long, many-user data set (bench/year.sh): job events
// and final job × GPU aggregates for every job, raw samples only for the
// last SampleDays.
type YearOptions struct {
	Cluster     string
	Nodes       int
	GPUsPerNode int
	// End is where the data set ends (exclusive); it starts Days before.
	End  time.Time
	Days int
	// JobsPerNodeDay is about how many jobs a node runs a day.
	JobsPerNodeDay              int
	Users, Accounts, Partitions int
	// SampleDays of raw samples at SampleInterval before End (0: none).
	SampleDays     int
	SampleInterval time.Duration
	Seed           int64
}

// YearTruth is what an exact ingest of a year must reproduce.
type YearTruth struct {
	Jobs, Events, AggregateRecords, Samples int
	Files                                   int
	AllocGPUS                               int64
}

// Year writes the data set under incoming, node by node on all CPUs. Job
// events are written from the record types (not through the hook code,
// which would take hours for 2 million jobs); each node's final
// aggregates of a day go into one JSON-lines file, as a node that shipped
// them together would.
func Year(incoming string, o YearOptions) (YearTruth, error) {
	if o.Users == 0 {
		o.Users = 300
	}
	if o.Accounts == 0 {
		o.Accounts = 40
	}
	if o.Partitions == 0 {
		o.Partitions = 4
	}
	if o.SampleInterval == 0 {
		o.SampleInterval = time.Minute
	}
	var mu sync.Mutex
	var total YearTruth
	var firstErr error
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(runtime.GOMAXPROCS(0), 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := range next {
				t, err := yearNode(incoming, o, n)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				total.Jobs += t.Jobs
				total.Events += t.Events
				total.AggregateRecords += t.AggregateRecords
				total.Samples += t.Samples
				total.Files += t.Files
				total.AllocGPUS += t.AllocGPUS
				mu.Unlock()
			}
		}()
	}
	for n := range o.Nodes {
		next <- n
	}
	close(next)
	wg.Wait()
	return total, firstErr
}

// yearUser picks a user: a few heavy users, a long tail.
func yearUser(rng *rand.Rand, o YearOptions) (user, account string) {
	u := min(int(rng.ExpFloat64()*float64(o.Users)/4), o.Users-1)
	a := u % o.Accounts
	if u%7 == 0 && rng.Intn(3) == 0 {
		a = (u + 1) % o.Accounts // some users charge a second account
	}
	return fmt.Sprintf("user%03d", u), fmt.Sprintf("acct%02d", a)
}

func yearNode(incoming string, o YearOptions, n int) (YearTruth, error) {
	var t YearTruth
	node := NodeName(n)
	dir := filepath.Join(incoming, node)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return t, err
	}
	gen := Options{Cluster: o.Cluster, GPUsPerNode: o.GPUsPerNode, Model: "h100"}
	jobs := YearNodeJobs(o, n)
	for _, j := range jobs {
		if err := writeEvents(dir, gen, j); err != nil {
			return t, err
		}
		t.Jobs++
		t.Events += 2
		t.Files += 2
		t.AllocGPUS += int64(len(j.GPUs)) * (j.End - j.Start)
	}
	if err := dropRunMarks(dir); err != nil {
		return t, err
	}
	// Samples for the last days, from the same jobs.
	if o.SampleDays > 0 {
		so := gen
		so.Start = o.End.Add(-time.Duration(o.SampleDays) * 24 * time.Hour)
		so.Duration = time.Duration(o.SampleDays) * 24 * time.Hour
		so.Interval = o.SampleInterval
		so.Segment = 10 * time.Minute
		var st Truth
		files, err := writeSamples(dir, so, node, jobs, &st)
		if err != nil {
			return t, err
		}
		t.Samples += st.Samples
		t.Files += files
	}
	// One aggregates file per node and day, the jobs that ended that day.
	byDay := map[int64][]record.JobGPU{}
	for _, j := range jobs {
		dur := float64(j.End - j.Start)
		for _, g := range j.GPUs {
			uuid := sim.UUID(node, g)
			a := record.JobGPU{Schema: record.JobGPUSchema, Key: record.JobGPUKey(o.Cluster, j.ID, 0, node, uuid), Seq: 1, Final: true,
				Cluster: o.Cluster, Node: node, Job: j.ID, User: j.User, Account: j.Account, Partition: j.Partition,
				UUID: uuid, Index: g, Model: "NVIDIA H100 80GB HBM3", First: time.Unix(j.Start, 0).UTC(), Last: time.Unix(j.End, 0).UTC(),
				Samples: uint64(dur / 10), SampleSeconds: dur, UtilSeconds: dur * float64(j.Util) / 100 * 13 / 14, UtilMax: j.Util,
				MemMaxMiB: uint64(j.Util) * 800, MemTotalMiB: 81559, EnergyMJ: uint64(dur) * uint64(70_000+j.Util*6000)}
			if j.Util == 0 {
				a.IdleSeconds = dur
			}
			byDay[j.End/86400] = append(byDay[j.End/86400], a)
		}
	}
	for day, aggs := range byDay {
		name := fmt.Sprintf("jobgpu.%s.%s.day%d.jsonl", o.Cluster, node, day)
		if len(aggs) == 1 {
			a := aggs[0] // a file of one record is named by its key
			name = record.JobGPUFileName(o.Cluster, a.Job, 0, node, a.UUID, a.Seq)
		}
		f, err := os.OpenFile(filepath.Join(dir, name), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return t, err
		}
		w := bufio.NewWriter(f)
		enc := json.NewEncoder(w)
		for i := range aggs {
			if err := enc.Encode(&aggs[i]); err != nil {
				f.Close()
				return t, err
			}
		}
		if err := w.Flush(); err != nil {
			f.Close()
			return t, err
		}
		if err := f.Close(); err != nil {
			return t, err
		}
		t.AggregateRecords += len(aggs)
		t.Files++
	}
	return t, nil
}

// YearNodeJobs plans node n's jobs of the year as Year writes them: GPUs
// in blocks, each running jobs back to back (bench/scale sums them into
// rollups without files).
func YearNodeJobs(o YearOptions, n int) []Job {
	rng := rand.New(rand.NewSource(o.Seed*1_000_003 + int64(n)))
	node := NodeName(n)
	parts := []string{"gpu", "long", "short", "interactive"}[:min(o.Partitions, 4)]
	start, end := o.End.Add(-time.Duration(o.Days)*24*time.Hour).Unix(), o.End.Unix()
	// GPUs in blocks of 1, 2, 4 or 8, each running jobs back to back.
	blocks := gpuBlocks(rng, o.GPUsPerNode, []int{1, 2, 4, 8})
	// Mean time a job holds its block, gap included.
	mean := 86400 * float64(len(blocks)) / float64(max(o.JobsPerNodeDay, 1))
	var jobs []Job
	seq := uint64(0)
	for _, b := range blocks {
		cur := start + int64(rng.Intn(600))
		for {
			// A quarter are short (tests, failures), the rest spread
			// around the mean; a gap of up to 10 minutes between jobs.
			var d int64
			if rng.Intn(4) == 0 {
				d = 60 + int64(rng.Intn(840))
			} else {
				d = int64((0.2 + rng.Float64()*1.6) * (mean*4/3 - 1000))
			}
			d = max(d, 60)
			if cur+d >= end {
				break
			}
			seq++
			u, a := yearUser(rng, o)
			p := parts[0]
			switch r := rng.Intn(10); {
			case r >= 9 && len(parts) > 3:
				p = parts[3]
			case r >= 7 && len(parts) > 2:
				p = parts[2]
			case r >= 5 && len(parts) > 1:
				p = parts[1]
			}
			j := Job{ID: seq*1000 + uint64(n), Node: node, User: u, Account: a, Partition: p, GPUs: b,
				Start: cur, End: cur + d, HasEnd: true, Util: uint32(rng.Intn(101))}
			if rng.Intn(10) == 0 {
				j.Util = 0
			}
			jobs = append(jobs, j)
			cur += d + int64(5+rng.Intn(600))
		}
	}
	return jobs
}
