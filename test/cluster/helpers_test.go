// Package cluster_test runs gpusuite on the multi-node Slurm of
// test/cluster/harness.sh: a controller and GPU servers in namespaces of
// their own, each with its hooks and agent, shipping to one /data that
// `gpuacct serve` on the head ingests (docs/testing.md).
package cluster_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/testkit/fetch"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/poll"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// cl is the multi-node cluster as a test sees it.
type cl struct {
	*slurm.Cluster
	nodes   []string
	data    string // the shared /data
	db      string // the ledger serve writes, on /data
	head    string // the head's gpusuite.toml
	serve   string // serve's base URL
	harness string
	gpuacct string
}

// get has the cluster to this test alone, with every server up, idle and
// in service: a test that loses a server or cuts it off /data puts it
// back in its cleanup, and a killed test's leftovers are mended here.
func get(t *testing.T) *cl {
	t.Helper()
	c := slurm.Multi(t)
	m := &cl{
		Cluster: c,
		nodes:   strings.Fields(c.Path("GPUSUITE_CLUSTER_NODES")),
		data:    c.Path("GPUSUITE_CLUSTER_DATA"),
		head:    c.Path("GPUSUITE_CLUSTER_HEAD_CONFIG"),
		serve:   c.Path("GPUSUITE_CLUSTER_SERVE"),
		harness: c.Path("GPUSUITE_CLUSTER_HARNESS"),
		gpuacct: slurm.Binary(t, "gpuacct"),
	}
	m.db = m.data + "/gpuacct.db"
	for _, u := range []string{"alice", "bob", "carol"} {
		slurm.EnsureUser(t, u)
	}
	for _, n := range m.nodes {
		m.sh(t, "ensure", n)
	}
	m.WaitIdle(t, 2*time.Minute)
	return m
}

// sh runs a harness command (kill, revive, data-off, data-on, exec).
func (m *cl) sh(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, m.harness, args...)
	cmd.Env = m.Env()
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("harness %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String()
}

// nodeState is sinfo's short state of node ("idle", "down*", "drain", ...).
func (m *cl) nodeState(t *testing.T, node string) string {
	t.Helper()
	return strings.TrimSpace(m.Run(t, "", "sinfo", "-h", "-N", "-n", node, "-o", "%t"))
}

// waitUntil calls cond every 250 ms until it holds (poll.Until).
func waitUntil(t *testing.T, what string, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	poll.Until(t, what, timeout, 250*time.Millisecond, cond)
}

// run is one run of a job as sacct -D has it, with the GPUs of each of
// its nodes (the jobs here ask the same GPUs of every node).
type run struct {
	id        uint64
	account   string
	nodes     []string
	gpus      int64 // over all nodes
	elapsed   int64
	start     int64
	end       int64
	state     string
	perNodeGP int64 // GPUs on each node
	nodeCount int   // AllocTRES's node=N
}

// sacctRuns is every run (-D: a requeued job's earlier runs too) of the
// jobs, each job's in start order.
func (m *cl) sacctRuns(t *testing.T, ids []uint64) []run {
	t.Helper()
	var runs []run
	for _, a := range m.SacctRuns(t, ids...) {
		r := run{id: a.JobIDRaw, account: a.Account, nodes: expandNodes(t, m, a.NodeList), gpus: int64(a.GPUs),
			elapsed: a.ElapsedRaw, start: a.Start.Unix(), end: a.End.Unix(), state: a.State, nodeCount: a.Nodes}
		if len(r.nodes) > 0 {
			r.perNodeGP = r.gpus / int64(len(r.nodes))
		}
		runs = append(runs, r)
	}
	return runs
}

// settledRuns is sacctRuns once slurmdbd has every run's whole node list:
// right after a job ends, sacct may list fewer nodes than its AllocTRES
// counts for a moment.
func (m *cl) settledRuns(t *testing.T, ids []uint64) []run {
	t.Helper()
	var runs []run
	waitUntil(t, "sacct lists every node of the runs", 30*time.Second, func() (bool, string) {
		runs = m.sacctRuns(t, ids)
		for _, r := range runs {
			if len(r.nodes) != r.nodeCount {
				return false, fmt.Sprintf("job %d: nodes %v, AllocTRES node=%d", r.id, r.nodes, r.nodeCount)
			}
		}
		return true, ""
	})
	return runs
}

// expandNodes turns Slurm's host list ("gpu[1-2]") into names.
func expandNodes(t *testing.T, m *cl, list string) []string {
	t.Helper()
	if list == "" || list == "None assigned" {
		return nil
	}
	if !strings.ContainsAny(list, "[,") {
		return []string{list} // one node: no need to ask scontrol
	}
	return strings.Fields(m.Run(t, "", "scontrol", "show", "hostnames", list))
}

// ledgerNode is one node of one run in the ledger.
type ledgerNode struct {
	gpus, start, end int64
}

// ledgerRun is one run of a job in the ledger.
type ledgerRun struct {
	restart          int64
	state, source    string
	checked          int64
	alloc            int64
	start, end       int64
	account, quality string
	nodes            map[string]ledgerNode
}

// ledgerRuns reads the runs of job id, by restart.
func (m *cl) ledgerRuns(t *testing.T, id uint64) []ledgerRun {
	t.Helper()
	var runs []ledgerRun
	for _, row := range ledgerdb.Strings(t, m.db, `SELECT restart, state, coalesce(end_source, ''), sacct_checked, alloc_gpu_s,
 coalesce(start, -1), coalesce(end, -1), account, quality FROM jobs WHERE cluster = 'gsc' AND job_id = ? ORDER BY restart`, id) {
		f := strings.Split(row, "|")
		r := ledgerRun{state: f[1], source: f[2], account: f[7], quality: f[8], nodes: map[string]ledgerNode{}}
		for i, p := range []*int64{&r.restart, nil, nil, &r.checked, &r.alloc, &r.start, &r.end} {
			if p != nil {
				*p, _ = strconv.ParseInt(f[i], 10, 64)
			}
		}
		for _, nrow := range ledgerdb.Strings(t, m.db, `SELECT n.name, jn.gpus, coalesce(jn.start, -1), coalesce(jn.end, -1)
 FROM job_nodes jn JOIN nodes n ON n.id = jn.node_id JOIN jobs j ON j.id = jn.job
 WHERE j.cluster = 'gsc' AND j.job_id = ? AND j.restart = ?`, id, r.restart) {
			g := strings.Split(nrow, "|")
			var ln ledgerNode
			ln.gpus, _ = strconv.ParseInt(g[1], 10, 64)
			ln.start, _ = strconv.ParseInt(g[2], 10, 64)
			ln.end, _ = strconv.ParseInt(g[3], 10, 64)
			r.nodes[g[0]] = ln
		}
		runs = append(runs, r)
	}
	return runs
}

// waitReconciled waits until serve has every run of the jobs in the
// ledger, ended and with Slurm's times (sacct_checked = 1), as many runs
// of each as sacct lists.
func (m *cl) waitReconciled(t *testing.T, timeout time.Duration, ids ...uint64) {
	t.Helper()
	want := map[uint64]int{}
	for _, r := range m.sacctRuns(t, ids) {
		want[r.id]++
	}
	waitUntil(t, "serve took every run's times from sacct", timeout, func() (bool, string) {
		for _, id := range ids {
			runs := m.ledgerRuns(t, id)
			if len(runs) != want[id] {
				return false, fmt.Sprintf("job %d: %d runs in the ledger, sacct lists %d", id, len(runs), want[id])
			}
			for _, r := range runs {
				if r.checked != 1 || r.end < 0 {
					return false, fmt.Sprintf("job %d run %d: end %d, sacct_checked %d, state %s", id, r.restart, r.end, r.checked, r.state)
				}
			}
		}
		return true, ""
	})
}

// compareWithSacct fails the test for each run whose nodes, per-node GPUs
// and GPU-seconds (per node and in all) differ from sacct's, and returns
// the ledger's GPU-seconds by account.
func (m *cl) compareWithSacct(t *testing.T, ids []uint64) map[string]int64 {
	t.Helper()
	byJob := map[uint64][]run{}
	for _, r := range m.settledRuns(t, ids) {
		byJob[r.id] = append(byJob[r.id], r)
	}
	byAccount := map[string]int64{}
	for _, id := range ids {
		runs := m.ledgerRuns(t, id)
		want := byJob[id]
		if len(runs) != len(want) {
			t.Errorf("job %d: %d runs in the ledger, sacct -D lists %d", id, len(runs), len(want))
			continue
		}
		for i, r := range runs {
			w := want[i]
			if r.alloc != w.gpus*w.elapsed {
				t.Errorf("job %d run %d: ledger %d GPU-seconds, sacct %d (%d GPUs × %d s, %s)", id, r.restart, r.alloc, w.gpus*w.elapsed, w.gpus, w.elapsed, w.state)
			}
			if r.start != w.start || r.end != w.end {
				t.Errorf("job %d run %d: ledger %d–%d, sacct %d–%d", id, r.restart, r.start, r.end, w.start, w.end)
			}
			var names []string
			for n, ln := range r.nodes {
				names = append(names, n)
				if got, want := ln.gpus*(ln.end-ln.start), w.perNodeGP*w.elapsed; got != want {
					t.Errorf("job %d run %d on %s: ledger %d GPU-seconds (%d GPUs, %d–%d), sacct %d (%d GPUs × %d s)",
						id, r.restart, n, got, ln.gpus, ln.start, ln.end, want, w.perNodeGP, w.elapsed)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, w.nodes) {
				t.Errorf("job %d run %d: ledger nodes %v, sacct %v", id, r.restart, names, w.nodes)
			}
			byAccount[r.account] += r.alloc
		}
	}
	return byAccount
}

// boardDoc is serve's live board (GET /api/v1/board).
func (m *cl) boardDoc(t *testing.T) board.StatusDoc {
	t.Helper()
	var doc board.StatusDoc
	m.getJSON(t, "/api/v1/board", &doc)
	return doc
}

// getJSON GETs path from serve and decodes its JSON answer into v.
func (m *cl) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	fetch.JSON(t, m.serve+path, v)
}

// quarantined lists the files ingest set aside, with their reasons.
func (m *cl) quarantined(t *testing.T) []string {
	t.Helper()
	var out []string
	entries, _ := os.ReadDir(m.data + "/quarantine")
	for _, d := range entries {
		files, _ := os.ReadDir(m.data + "/quarantine/" + d.Name())
		for _, f := range files {
			if strings.HasSuffix(f.Name(), ".reason") {
				reason, _ := os.ReadFile(m.data + "/quarantine/" + d.Name() + "/" + f.Name())
				out = append(out, d.Name()+"/"+f.Name()+": "+strings.TrimSpace(string(reason)))
			}
		}
	}
	return out
}

// nodeLog is a server's log file (prolog.log, epilog.log, agent.log,
// slurmd.log) as the head sees that server's disk.
func (m *cl) nodeLog(t *testing.T, node, name string) string {
	t.Helper()
	b, err := os.ReadFile(m.Path("GPUSUITE_SLURM_DIR") + "/nodes/" + node + "/log/" + name)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// ledgerRows is every row of q on the ledger, columns joined by "|".
func (m *cl) ledgerRows(t *testing.T, q string, args ...any) []string {
	t.Helper()
	return ledgerdb.Strings(t, m.db, q, args...)
}

// gpuacctRun runs gpuacct with the head's config (the ledger on /data
// and sacct, read-only beside serve) and returns its stdout.
func (m *cl) gpuacctRun(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var out, errb bytes.Buffer
	cmd := exec.CommandContext(ctx, m.gpuacct, append([]string{"--config", m.head}, args...)...)
	cmd.Env = m.Env()
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("gpuacct %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// decode decodes a command's JSON output.
func decode(t *testing.T, out string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("decode %v:\n%s", err, out)
	}
}

// atoi is strconv.Atoi for figures the harness or the ledger wrote.
func atoi[T int | int64](s string) T {
	v, _ := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	return T(v)
}

// quiet runs a Slurm command as root and ignores how it ends: for cleanups
// that undo what the test may have undone itself (t.Context is already
// cancelled when cleanups run).
func (m *cl) quiet(name string, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = m.Cmd(ctx, "", name, args...).Run()
}
