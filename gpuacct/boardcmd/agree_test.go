package boardcmd

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/testkit/fetch"
	"github.com/aicloud/gpusuite/internal/web"
)

// demoLike is the demo's board (internal/demo: layout.go, slurmview.go)
// as files and values: gpu01 and gpu02 in partitions gpu and long, gpu01
// with a free, an idle, a foreign and a booked GPU, gpu02 with two busy
// and two free, gpu03 reserved for a team, gpu04 draining with two busy.
// Three GPUs are free: gpu01:0, gpu02:2 and gpu02:3.
func demoLike(t *testing.T) (dir string, slurm slurmstate.State, notes []board.Note) {
	t.Helper()
	dir = t.TempDir()
	const model = "NVIDIA H100 80GB HBM3"
	job := func(id uint64, user string) record.LiveJob {
		return record.LiveJob{Job: id, User: user, Account: "nlp", Start: now.Add(-time.Hour)}
	}
	gpus := func(jobs map[int]record.LiveJob) []record.LiveGPU {
		var out []record.LiveGPU
		for i := range 4 {
			if j, ok := jobs[i]; ok {
				out = append(out, gpu(i, model, 80, 30000, j))
			} else {
				out = append(out, gpu(i, model, 0, 0))
			}
		}
		return out
	}
	g1 := gpus(map[int]record.LiveJob{1: job(1399, "erin")})
	idle := now.Add(-10 * time.Second)
	g1[1].Util, g1[1].IdleSince = u32(0), &idle
	g1[2].Procs = []record.LiveProc{{PID: 19999, Job: 1399, MemUsedMiB: 27000, Foreign: true}}
	lives := []record.Live{
		{Node: "gpu01", GPUs: g1},
		{Node: "gpu02", GPUs: gpus(map[int]record.LiveJob{0: job(1400, "frank"), 1: job(1400, "frank")})},
		{Node: "gpu03", GPUs: gpus(nil)},
		{Node: "gpu04", GPUs: gpus(map[int]record.LiveJob{0: job(1401, "grace"), 1: job(1401, "grace")})},
	}
	for _, l := range lives {
		l.Schema, l.Cluster, l.Interval, l.Time = record.LiveSchema, "c1", 10, now.Add(-5*time.Second)
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, record.LiveFileName(l.Node)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	node := func(name string, cond slurmstate.Condition, used int, parts ...string) slurmstate.Node {
		return slurmstate.Node{Name: name, Condition: cond, Partitions: parts, GPUCount: 4, GPUsUsed: used,
			GPUs: []slurmstate.GPU{{Type: "h100", Count: 4, Used: used}}}
	}
	gpu04 := node("gpu04", slurmstate.Draining, 2, "gpu")
	gpu04.Reason = "simulated: NVLink errors"
	slurm = slurmstate.State{At: now, Nodes: []slurmstate.Node{
		node("gpu01", slurmstate.Mixed, 1, "gpu", "long"), node("gpu02", slurmstate.Mixed, 2, "gpu", "long"),
		node("gpu03", slurmstate.Idle, 0, "gpu"), gpu04,
	}, Reservations: []slurmstate.Reservation{{Name: "simulated-nlp-deadline", Start: now.Add(-time.Hour), End: now.Add(time.Hour), Nodes: []string{"gpu03"}}}}
	three := 3
	notes = []board.Note{{ID: 1, Cluster: "c1", Node: "gpu01", GPU: &three, Until: now.Add(time.Hour), Text: "booked", Author: "heidi"}}
	return dir, slurm, notes
}

var (
	freeLine = regexp.MustCompile(`(?m)^(\d+) GPU\(s\) free, `)
	kpiFree  = regexp.MustCompile(`id="kpi-free">(\d+)<`)
)

// TestFreeAgrees: gpuacct free (table and json), gpuacct status, the API
// (/api/v1/free, /api/v1/board) and the board page count the same GPUs
// free on the demo's board, by board.IsFree. Before, free's rows counted
// the reserved node and each node of two partitions twice (10), status,
// the API and the page the reserved node (7): 3 GPUs are free.
func TestFreeAgrees(t *testing.T) {
	dir, slurm, notes := demoLike(t)
	got, doc := freeCounts(t, now, dir, slurm, notes)
	want := map[string]int{}
	for k := range got {
		want[k] = 3
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("free GPUs by reader (-want +got):\n%s", d)
	}
	// The reserved, booked and drained GPUs are counted apart, once each.
	if doc.Totals.FreeReserved != 4 || doc.Totals.Booked != 1 || doc.Totals.States[board.Drained] != 2 {
		t.Errorf("reserved %d, booked %d, drained %d; want 4, 1, 2", doc.Totals.FreeReserved, doc.Totals.Booked, doc.Totals.States[board.Drained])
	}
}

// freeCounts are the free GPUs at the time at, on the snapshots of dir,
// Slurm's view slurm and notes, as each reader counts them: gpuacct free
// (its total line and its json), gpuacct status, /api/v1/free,
// /api/v1/board and the board page; and the API's board.
func freeCounts(t *testing.T, at time.Time, dir string, slurm slurmstate.State, notes []board.Note) (map[string]int, board.StatusDoc) {
	t.Helper()
	readSlurm := func() (slurmstate.State, error) { return slurm, nil }
	readNotes := func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) { return notes, nil }
	got := map[string]int{}

	code, out, errs := runAt(t, at, readSlurm, readNotes, "free", "--live-dir", dir)
	m := freeLine.FindStringSubmatch(out)
	if code != 0 || m == nil {
		t.Fatalf("gpuacct free: exit %d, no total line:\n%s%s", code, out, errs)
	}
	got["gpuacct free"], _ = strconv.Atoi(m[1])
	var free board.FreeDoc
	var status board.StatusDoc
	for _, r := range []struct {
		name string
		args []string
		doc  any
	}{
		{"gpuacct free --format json", []string{"free", "--format", "json", "--live-dir", dir}, &free},
		{"gpuacct status --format json", []string{"status", "--format", "json", "--live-dir", dir}, &status},
	} {
		code, out, errs := runAt(t, at, readSlurm, readNotes, r.args...)
		if code != 0 {
			t.Fatalf("%s: exit %d:\n%s%s", r.name, code, out, errs)
		}
		if err := json.Unmarshal([]byte(out), r.doc); err != nil {
			t.Fatalf("%s: %v:\n%s", r.name, err, out)
		}
	}
	got["gpuacct free --format json"], got["gpuacct status --format json"] = free.FreeTotal, status.Totals.Free

	src := board.NewSource(board.SourceOptions{LiveDir: dir, Cluster: "c1", Now: func() time.Time { return at },
		Slurm: func(context.Context) (slurmstate.State, error) { return readSlurm() },
		Notes: func(context.Context, time.Time) ([]board.Note, error) { return notes, nil }})
	src.RefreshSlurm(context.Background())
	h, err := web.New(web.Options{DB: filepath.Join(t.TempDir(), "none.db"), Board: src, Location: time.UTC,
		Now: func() time.Time { return at }})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { h.EndStreams(); srv.Close(); h.Close() })
	get := func(path string) []byte { return fetch.Get(t, srv.URL+path) }
	var apiFree board.FreeDoc
	var apiBoard board.StatusDoc
	if err := json.Unmarshal(get("/api/v1/free"), &apiFree); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(get("/api/v1/board"), &apiBoard); err != nil {
		t.Fatal(err)
	}
	got["/api/v1/free"], got["/api/v1/board"] = apiFree.FreeTotal, apiBoard.Totals.Free
	page := kpiFree.FindSubmatch(get("/"))
	if page == nil {
		t.Fatal("the board page has no free count (id=kpi-free)")
	}
	got["board page"], _ = strconv.Atoi(string(page[1]))
	return got, apiBoard
}
