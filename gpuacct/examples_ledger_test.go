package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// The --help examples run against the ledger built here: the jobs, users,
// teams, clusters and nodes they name, at the dates they name and in the
// windows they name relative to now (the commands run on the real clock).

// exJob is one job run of the examples' ledger.
type exJob struct {
	cluster, node  string
	id, array      uint64
	task           int64 // with array
	user, account  string
	gpus           []int
	start, end     time.Time
	util           uint32
	withoutSamples bool // only its events: an old job whose samples are gone
	partition      string
}

// exampleJobs are the examples' jobs. yesterday is yesterday 00:00 UTC.
func exampleJobs(now time.Time) []exJob {
	yesterday := now.UTC().Truncate(24*time.Hour).AddDate(0, 0, -1)
	jobs := []exJob{
		// gpuacct job 123456, plot 123456, ignore 123456 …: alice's, in
		// the last day.
		{cluster: "gpu1", node: "gpu01", id: 123456, array: 123456, task: 0, user: "alice", account: "vision", gpus: []int{0, 1},
			start: now.Add(-5 * time.Hour), end: now.Add(-time.Hour), util: 80},
		// 123456_3: a task of the same array, yesterday (reports of the
		// last 7 days end at today 00:00).
		{cluster: "gpu1", node: "gpu01", id: 123459, array: 123456, task: 3, user: "alice", account: "vision", gpus: []int{2},
			start: yesterday.Add(9 * time.Hour), end: yesterday.Add(15 * time.Hour), util: 40},
		// 123457_3: ignored beside 123456.
		{cluster: "gpu1", node: "gpu02", id: 123462, array: 123457, task: 3, user: "bob", account: "nlp", gpus: []int{0},
			start: now.Add(-4 * time.Hour), end: now.Add(-2 * time.Hour), util: 60},
		// Yesterday's: --start yesterday --end today.
		{cluster: "gpu1", node: "gpu02", id: 123400, user: "bob", account: "nlp", gpus: []int{0, 1, 2, 3},
			start: yesterday.Add(10 * time.Hour), end: yesterday.Add(14 * time.Hour), util: 30},
		// In January and November 2026: the fixed windows.
		{cluster: "gpu1", node: "gpu01", id: 110001, user: "alice", account: "vision", gpus: []int{0, 1, 2, 3},
			start: time.Date(2026, 1, 10, 8, 0, 0, 0, time.UTC), end: time.Date(2026, 1, 10, 20, 0, 0, 0, time.UTC), withoutSamples: true},
		{cluster: "gpu1", node: "gpu02", id: 120001, user: "carol", account: "nlp", gpus: []int{0, 1},
			start: time.Date(2026, 11, 5, 8, 0, 0, 0, time.UTC), end: time.Date(2026, 11, 6, 8, 0, 0, 0, time.UTC), withoutSamples: true},
		// -M gpu2: the other cluster of the ledger has a job 123456 too.
		{cluster: "gpu2", node: "g2n01", id: 123456, user: "dave", account: "nlp", gpus: []int{0},
			start: yesterday.Add(3 * time.Hour), end: yesterday.Add(5 * time.Hour), util: 90},
	}
	for i := range jobs {
		jobs[i].start, jobs[i].end = jobs[i].start.Truncate(time.Minute), jobs[i].end.Truncate(time.Minute)
		jobs[i].partition = "gpu"
	}
	return jobs
}

// exampleInterval is the sampling interval of the examples' samples.
const exampleInterval = 2 * time.Minute

// gpusPerNode is every node's GPU count: gpu01:3 exists.
const gpusPerNode = 4

// exampleConfig writes the configuration the examples run under into
// dir: the ledger, incoming, requests and live directories under it, the
// local cluster gpu1, the team mapping, no sacct, times in UTC, and the
// test's own user as the service user (ignore, note rm).
func exampleConfig(t *testing.T, dir string) string {
	t.Helper()
	u, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"incoming", "quarantine", "archive", "requests", "live"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	teams := filepath.Join(dir, "teams.toml")
	writeFile(t, teams, `[teams.vision]
accounts = ["vision"]
parent = "research"

[teams.nlp]
accounts = ["nlp"]
parent = "research"

[teams.research]
`)
	// sacctmgr knows gpu1's capacity, 8 GPUs for a year: report cluster.
	sacctmgr := filepath.Join(dir, "sacctmgr")
	writeFile(t, sacctmgr, `#!/bin/sh
case "$*" in
*" event "*) echo 'gpu1||2025-11-01T00:00:00|Unknown|0|cpu=128,node=2,gres/gpu=8|' ;;
esac
`)
	if err := os.Chmod(sacctmgr, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "gpusuite.toml")
	writeFile(t, cfg, fmt.Sprintf(`[cluster]
name = "gpu1"

[store]
path = %[1]q

[ingest]
incoming = %[2]q
quarantine = %[3]q
archive = %[4]q
keep = "delete"
sacct = ""
sacctmgr = %[10]q
service_user = %[5]q
metrics_listen = "127.0.0.1:0"

[agent]
interval = %[6]q
live_dir = %[7]q

[board]
live_dir = %[7]q

[report]
teams = %[8]q
tz = "UTC"
requests = %[9]q
`, filepath.Join(dir, "gpuacct.db"), filepath.Join(dir, "incoming"), filepath.Join(dir, "quarantine"), filepath.Join(dir, "archive"),
		u.Username, exampleInterval.String(), filepath.Join(dir, "live"), teams, filepath.Join(dir, "requests"), sacctmgr))
	return cfg
}

// writeRecords writes what the agents and hooks of the jobs' nodes ship
// into incoming/<node>/: each job's start and end events and, for the
// nodes of jobs with samples, every GPU sampled each interval from the
// first such job's start to now (the nodes are alive: check is happy).
func writeRecords(t *testing.T, incoming string, jobs []exJob, now time.Time) {
	t.Helper()
	byNode := map[[2]string][]exJob{}
	for _, j := range jobs {
		k := [2]string{j.cluster, j.node}
		byNode[k] = append(byNode[k], j)
		dir := filepath.Join(incoming, j.node)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, kind := range []record.Kind{record.JobStart, record.JobEnd} {
			at := j.start
			if kind == record.JobEnd {
				at = j.end
			}
			uid, gid := int64(1000), int64(1000)
			ev := record.Event{Schema: record.EventSchema, Kind: kind, Time: at.UTC(), Source: "prolog", Cluster: j.cluster, Node: j.node,
				Key: record.EventKey(j.cluster, j.id, 0, j.node, kind),
				Job: record.Job{ID: j.id, User: j.user, UID: &uid, GID: &gid, Account: j.account, Partition: j.partition,
					Node: j.node, Cluster: j.cluster, GPUs: j.gpus}}
			if j.array != 0 {
				task := j.task
				ev.Job.ArrayJobID, ev.Job.ArrayTaskID = j.array, &task
			}
			if kind == record.JobEnd {
				ev.Source, ev.Job.Exit = "epilog", &record.Exit{}
			}
			for _, g := range j.gpus {
				idx := g
				ev.GPUs = append(ev.GPUs, record.GPU{Minor: g, Index: &idx, UUID: exampleUUID(j.cluster, j.node, g), Model: "NVIDIA H100 80GB HBM3"})
			}
			data, err := json.Marshal(&ev)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, filepath.Join(dir, record.EventFileName(j.cluster, j.id, 0, j.node, kind)), string(data))
		}
	}
	for k, js := range byNode {
		writeSegment(t, filepath.Join(incoming, k[1]), k[0], k[1], js, now)
	}
}

// writeSegment writes one segment of node's samples from its first job
// with samples to now.
func writeSegment(t *testing.T, dir, cluster, node string, jobs []exJob, now time.Time) {
	t.Helper()
	var from time.Time
	to := now.Add(-exampleInterval)
	for _, j := range jobs {
		if j.withoutSamples {
			continue
		}
		if from.IsZero() || j.start.Before(from) {
			from = j.start
		}
	}
	if from.IsZero() {
		return
	}
	f, err := os.Create(filepath.Join(dir, record.SegmentFileName(cluster, node, 1)))
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	h := record.SegmentHeader{Schema: record.SegmentSchema, Key: record.SegmentKey(cluster, node, 1), Cluster: cluster, Node: node, Seq: 1,
		Interval: exampleInterval.Seconds(), Start: from.UTC()}
	if err := enc.Encode(&h); err != nil {
		t.Fatal(err)
	}
	energy := make([]uint64, gpusPerNode)
	for ts := from; ts.Before(to); ts = ts.Add(exampleInterval) {
		for g := 0; g < gpusPerNode; g++ {
			var util, power uint32 = 0, 70_000
			var job *exJob
			for i := range jobs {
				j := &jobs[i]
				if !j.withoutSamples && !ts.Before(j.start) && ts.Before(j.end) && hasGPU(j.gpus, g) {
					job = j
				}
			}
			if job != nil {
				util, power = job.util, 70_000+job.util*6_000
			}
			energy[g] += uint64(power) * uint64(exampleInterval.Seconds())
			e, mem := energy[g], uint64(util)*800
			s := record.Sample{Time: ts.UTC(), UUID: exampleUUID(cluster, node, g), Index: g, GPUUtil: &util, PowerMW: &power, EnergyMJ: &e, MemUsedMiB: &mem}
			if job != nil {
				s.Jobs = []record.JobShare{{Job: job.id, Share: 1, Idle: util < 1}}
				s.Procs = []record.Proc{{PID: uint32(1000 + g), MemUsedMiB: mem, Job: job.id}}
			}
			if err := enc.Encode(&s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func hasGPU(gpus []int, g int) bool {
	for _, x := range gpus {
		if x == g {
			return true
		}
	}
	return false
}

func exampleUUID(cluster, node string, g int) string {
	return fmt.Sprintf("GPU-%s-%s-%d", strings.ReplaceAll(cluster, "-", ""), node, g)
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}
