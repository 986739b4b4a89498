// Package reportfixture builds hand-made ledgers for the report tests of
// internal/report and gpuacct/reportcmd. It is for tests only: it writes
// fixtures into a t.TempDir and fails the test on any error.
package reportfixture

import (
	"context"
	"math/rand"

	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/store/storetest"
)

// Job is one job run on one node for a hand-made ledger.
type Job struct {
	ID         uint64
	Restart    int
	ArrayJob   uint64
	Task       *int64
	User, Acct string
	Part, Node string
	GPUs       int
	Start, End int64 // End 0: still running
	// Cluster is the job's cluster; "" is c1.
	Cluster string
}

// T0 is the fixtures' epoch: 2026-01-01 00:00 UTC, in Unix seconds.
var T0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// BuildLedger writes the jobs' start and end events through store.Batch,
// the way ingest does, on a new ledger of the engine under test
// (storetest.NewLedger), and returns its location: the file's path, or
// the database's URL.
func BuildLedger(t testing.TB, jobs []Job, now time.Time) string {
	t.Helper()
	l := storetest.NewLedger(t)
	st, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		cluster := j.Cluster
		if cluster == "" {
			cluster = "c1"
		}
		// A GPU's UUID is the world's, not its cluster's.
		uuid := "GPU-" + j.Node + "-"
		if cluster != "c1" {
			uuid = "GPU-" + cluster + "-" + j.Node + "-"
		}
		kinds := []record.Kind{record.JobStart}
		if j.End != 0 {
			kinds = append(kinds, record.JobEnd)
		}
		for _, k := range kinds {
			at := j.Start
			if k == record.JobEnd {
				at = j.End
			}
			ev := record.Event{Schema: record.EventSchema, Kind: k, Time: time.Unix(at, 0).UTC(), Cluster: cluster, Node: j.Node,
				Key: record.EventKey(cluster, j.ID, j.Restart, j.Node, k)}
			ev.Job = record.Job{ID: j.ID, RestartCount: j.Restart, User: j.User, Account: j.Acct, Partition: j.Part, Node: j.Node, Cluster: cluster,
				ArrayJobID: j.ArrayJob, ArrayTaskID: j.Task}
			for g := 0; g < j.GPUs; g++ {
				idx := g
				ev.Job.GPUs = append(ev.Job.GPUs, g)
				ev.GPUs = append(ev.GPUs, record.GPU{Minor: g, Index: &idx, UUID: uuid + strconv.Itoa(g), Model: "NVIDIA H100 80GB HBM3"})
			}
			if k == record.JobEnd {
				ev.Job.Exit = &record.Exit{}
			}
			if err := b.Event(&ev); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := b.ExtendOpen(); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	return l.Loc()
}

// RandomJobs makes n job runs from T0 over horizon seconds on 4 nodes:
// some requeued (restart 1, 2), some array tasks, some still running.
func RandomJobs(rng *rand.Rand, n int, horizon int64) []Job {
	users := []string{"alice", "bob", "carol", "dave", "erin"}
	acct := map[string]string{"alice": "vision", "bob": "vision", "carol": "nlp", "dave": "nlp", "erin": "robotics"}
	var out []Job
	for id := uint64(100); len(out) < n; id++ {
		u := users[rng.Intn(len(users))]
		runs, tasks := 1, 1
		if rng.Intn(8) == 0 {
			runs = 2 + rng.Intn(2)
		}
		if rng.Intn(6) == 0 {
			tasks = 2 + rng.Intn(5)
		}
		for task := 0; task < tasks; task++ {
			s := T0 + rng.Int63n(horizon-86400)
			jid := id
			var tk *int64
			var arr uint64
			if tasks > 1 {
				jid = id*100 + uint64(task)
				x := int64(task)
				tk, arr = &x, id
			}
			for r := 0; r < runs; r++ {
				d := 60 + rng.Int63n(3*86400)
				e := s + d
				if rng.Intn(30) == 0 && r == runs-1 {
					e = 0
				}
				out = append(out, Job{ID: jid, Restart: r, ArrayJob: arr, Task: tk, User: u, Acct: acct[u], Part: []string{"gpu", "long"}[rng.Intn(2)],
					Node: "gpu0" + strconv.Itoa(1+rng.Intn(4)), GPUs: 1 + rng.Intn(8), Start: s, End: e})
				s += d + 30
			}
		}
	}
	return out
}
