package reportcmd

import (
	"context"
	"math/rand"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/store"
)

// fxJob is one job run on one node for a hand-made ledger.
type fxJob struct {
	id         uint64
	restart    int
	arrayJob   uint64
	task       *int64
	user, acct string
	part, node string
	gpus       int
	start, end int64 // end 0: still running
}

// buildLedger writes the jobs' start and end events through store.Batch,
// the way ingest does, and returns the database path.
func buildLedger(t *testing.T, jobs []fxJob, now time.Time) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "gpuacct.db")
	st, err := store.Open(context.Background(), store.Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		kinds := []record.Kind{record.JobStart}
		if j.end != 0 {
			kinds = append(kinds, record.JobEnd)
		}
		for _, k := range kinds {
			at := j.start
			if k == record.JobEnd {
				at = j.end
			}
			ev := record.Event{Schema: record.EventSchema, Kind: k, Time: time.Unix(at, 0).UTC(), Cluster: "c1", Node: j.node,
				Key: record.EventKey("c1", j.id, j.restart, j.node, k)}
			ev.Job = record.Job{ID: j.id, RestartCount: j.restart, User: j.user, Account: j.acct, Partition: j.part, Node: j.node, Cluster: "c1",
				ArrayJobID: j.arrayJob, ArrayTaskID: j.task}
			for g := 0; g < j.gpus; g++ {
				idx := g
				ev.Job.GPUs = append(ev.Job.GPUs, g)
				ev.GPUs = append(ev.GPUs, record.GPU{Minor: g, Index: &idx, UUID: "GPU-" + j.node + "-" + strconv.Itoa(g), Model: "NVIDIA H100 80GB HBM3"})
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
	return path
}

func openTest(t *testing.T, path string) *report.DB {
	t.Helper()
	db, err := report.OpenDB(context.Background(), path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()

// randomJobs makes job runs over about 90 days on 4 nodes: some
// requeued (restart 1, 2), some array tasks, some still running.
func randomJobs(rng *rand.Rand, n int, horizon int64) []fxJob {
	users := []string{"alice", "bob", "carol", "dave", "erin"}
	acct := map[string]string{"alice": "vision", "bob": "vision", "carol": "nlp", "dave": "nlp", "erin": "robotics"}
	var out []fxJob
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
			s := t0 + rng.Int63n(horizon-86400)
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
				out = append(out, fxJob{id: jid, restart: r, arrayJob: arr, task: tk, user: u, acct: acct[u], part: []string{"gpu", "long"}[rng.Intn(2)],
					node: "gpu0" + strconv.Itoa(1+rng.Intn(4)), gpus: 1 + rng.Intn(8), start: s, end: e})
				s += d + 30
			}
		}
	}
	return out
}
