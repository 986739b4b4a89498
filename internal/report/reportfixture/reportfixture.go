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
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
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
// (ledgerdb.NewLedger), and returns its location: the file's path, or
// the database's URL.
func BuildLedger(t testing.TB, jobs []Job, now time.Time) string {
	t.Helper()
	l := ledgerdb.NewLedger(t)
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

// ReplicateYear copies the first days of the SQLite ledger at path
// forward, shifted in time, until it holds a year: new job rows (job ids
// offset), their nodes, GPUs, hours and rollups, the months summed from
// the days. The year benchmarks of internal/report and gpuacct/reportcmd
// both use it, so that they measure the same data set.
func ReplicateYear(tb testing.TB, path string, days int) {
	tb.Helper()
	var maxID, maxJob int64
	ledgerdb.Row(tb, path, `SELECT max(id), max(job_id) FROM jobs`, nil, &maxID, &maxJob)
	ledgerdb.Tx(tb, path, func(exec func(string, ...any)) {
		replicateIn(exec, days, maxID, maxJob)
	})
}

// replicateIn runs ReplicateYear's statements in its transaction.
func replicateIn(exec func(string, ...any), days int, maxID, maxJob int64) {
	for k := int64(1); int(k)*days < 365; k++ {
		shift := k * int64(days) * 86400
		stmts := []string{
			`INSERT INTO jobs(id, cluster, job_id, restart, user, uid, gid, account, team, partition, nodes, gpus, submit, start, end, exit_code, exit_signal,
 state, end_estimated, end_source, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, energy_mj, quality)
 SELECT id + ?1*?2, cluster, job_id + ?1*?3, restart, user, uid, gid, account, team, partition, nodes, gpus, submit + ?4, start + ?4, end + ?4, exit_code, exit_signal,
 state, end_estimated, end_source, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, energy_mj, quality FROM jobs WHERE id <= ?2`,
			`INSERT INTO job_nodes(job, node_id, gpus, model, start, end, end_estimated, end_source, exit_code, exit_signal, last_sample, quality, r_start, r_end, r_gpus)
 SELECT job + ?1*?2, node_id, gpus, model, start + ?4, end + ?4, end_estimated, end_source, exit_code, exit_signal, last_sample + ?4, quality, r_start + ?4, r_end + ?4, r_gpus FROM job_nodes WHERE job <= ?2`,
			`INSERT INTO job_gpus(job, gpu_id, node_id, minor, energy_start_mj, energy_end_mj) SELECT job + ?1*?2, gpu_id, node_id, minor, energy_start_mj, energy_end_mj FROM job_gpus WHERE job <= ?2`,
			`INSERT INTO job_hours SELECT job + ?1*?2, node_id, hour + ?4/3600, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs FROM job_hours WHERE job <= ?2`,
			`INSERT INTO rollup_hourly SELECT hour + ?4/3600, cluster, user, account, partition, node_id, model, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs
 FROM rollup_hourly WHERE hour < ?5/3600 AND hour + ?4/3600 < ?6/3600 ON CONFLICT DO UPDATE SET alloc_gpu_s = alloc_gpu_s + excluded.alloc_gpu_s, jobs = jobs + excluded.jobs`,
			`INSERT INTO rollup_daily SELECT day + ?4/86400, cluster, user, account, partition, model, ignored, alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs
 FROM rollup_daily WHERE day < ?5/86400 AND day + ?4/86400 < ?6/86400 ON CONFLICT DO UPDATE SET alloc_gpu_s = alloc_gpu_s + excluded.alloc_gpu_s, jobs = jobs + excluded.jobs`,
		}
		base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
		for _, q := range stmts {
			exec(q, k, maxID, maxJob, shift, base+int64(days)*86400, base+365*86400)
		}
	}
	// The nodes' hours and the months are summed from the replicated
	// hours and days, as the migrations that made their tables do.
	exec(`DELETE FROM rollup_hourly_sum`)
	exec(`INSERT INTO rollup_hourly_sum SELECT hour, cluster, user, account, partition, model, ignored,
 sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs)
 FROM rollup_hourly GROUP BY hour, cluster, user, account, partition, model, ignored`)
	for _, t := range []struct{ table, at string }{{"rollup_node_hour", "hour"}, {"rollup_node_day", "hour/24"},
		{"rollup_node_month", "CAST(strftime('%s', hour*3600, 'unixepoch', 'start of month') AS INTEGER)/86400"}} {
		exec(`DELETE FROM ` + t.table)
		exec(`INSERT INTO ` + t.table + ` SELECT ` + t.at + ` AS k, cluster, partition, node_id, model, ignored,
 sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)
 FROM rollup_hourly GROUP BY k, cluster, partition, node_id, model, ignored`)
	}
	exec(`DELETE FROM rollup_model_hour`)
	exec(`INSERT INTO rollup_model_hour SELECT hour, cluster, partition, model, ignored, sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s),
 sum(sample_s), sum(energy_mj), sum(jobs), sum(billing) FROM rollup_node_hour GROUP BY hour, cluster, partition, model, ignored`)
	exec(`DELETE FROM rollup_monthly`)
	exec(`INSERT INTO rollup_monthly SELECT CAST(strftime('%s', day*86400, 'unixepoch', 'start of month') AS INTEGER)/86400 AS m,
 cluster, user, account, partition, model, ignored, sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs)
 FROM rollup_daily GROUP BY m, cluster, user, account, partition, model, ignored`)
}
