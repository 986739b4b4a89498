package demo

import (
	"bytes"
	"context"
	"image/png"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// One simulated week of 2 nodes × 4 GPUs through the real agent, hooks
// and ingest: the ledger equals the ground truth, the report, the detail
// of the least efficient job and two readable plots are there; the live
// directory holds a snapshot of every node that the board reads without
// a problem, and the command that serves it is printed.
func TestPipeline(t *testing.T) {
	var out bytes.Buffer
	start := time.Now()
	dir := t.TempDir()
	res, err := Pipeline(context.Background(), &out, PipelineOptions{Dir: dir, ClusterDir: t.TempDir(), Nodes: 2, GPUs: 4, Weeks: 1,
		Interval: time.Minute, JobsPerDay: 8, Seed: 3, Width: 120, Start: time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC),
		Program: "/opt/bin/gpuacct"})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("pipeline took %s", time.Since(start).Round(time.Millisecond))
	s := out.String()
	if !sameTotals(res.Ledger, res.Truth.Total) {
		t.Errorf("ledger %+v\ntruth %+v", res.Ledger, res.Truth.Total)
	}
	for _, w := range []string{"Simulated 1 week(s) of cluster \"demo\": 2 nodes × 4 H100 GPUs", "real gpuacct agent", "quarantined 0, refused 0",
		"equal to the simulation's ground truth", "GPU usage by team, per week", "TOTAL", "$ gpuacct job " + strconv.FormatUint(res.Worst, 10),
		"Job " + strconv.FormatUint(res.Worst, 10) + " on demo", "UTILIZATION OVER THE JOB", "Notes:", "Plots: ",
		"\n    /opt/bin/gpuacct demo serve --dir " + dir + "\n", "open http://127.0.0.1:8080/"} {
		if !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
	// The job shown is the least efficient finished multi-GPU job of an
	// hour or more by the ground truth (ties: the one with most GPU-time).
	var best []simcluster.JobTruth
	for _, j := range res.Truth.Jobs {
		if len(j.GPUs) < 2 || j.End.Sub(j.Start) < time.Hour || j.SampleS == 0 {
			continue
		}
		if len(best) == 0 {
			best = append(best, j)
			continue
		}
		e, be := j.UsedS/float64(j.AllocS), best[0].UsedS/float64(best[0].AllocS)
		switch {
		case e < be-1e-12 || e <= be+1e-12 && j.AllocS > best[0].AllocS:
			best = []simcluster.JobTruth{j}
		case e <= be+1e-12 && j.AllocS == best[0].AllocS:
			best = append(best, j)
		}
	}
	found := false
	for _, j := range best {
		found = found || j.ID == res.Worst
	}
	if !found {
		t.Errorf("detail of job %d, but the least efficient are %v", res.Worst, best)
	}
	if len(res.Plots) != 2 || !strings.Contains(s, "Plots: "+res.Plots[0]+"\n       "+res.Plots[1]) {
		t.Fatalf("plots %v not printed", res.Plots)
	}
	for _, p := range res.Plots {
		f, err := os.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(f)
		f.Close()
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if b := img.Bounds(); b.Dx() < 800 || b.Dy() < 400 {
			t.Errorf("%s is %v: too small to read", p, b)
		}
	}
	lives, probs := board.Load(res.LiveDir, time.Now(), board.Limits{})
	if len(probs) > 0 || len(lives) != 2 {
		t.Fatalf("live directory %s: %d snapshots, problems %v", res.LiveDir, len(lives), probs)
	}
	for i, l := range lives {
		if l.Node != simcluster.NodeName(i) || l.Cluster != "demo" || len(l.GPUs) != 4 {
			t.Errorf("snapshot %d: node %q of cluster %q with %d GPUs", i, l.Node, l.Cluster, len(l.GPUs))
		}
	}
	// The first snapshot is taken after the standing jobs started.
	if n := len(lives[0].GPUs[1].Jobs); n != 1 || lives[0].GPUs[1].Jobs[0].Job <= res.Truth.Jobs[len(res.Truth.Jobs)-1].ID {
		t.Errorf("gpu01's GPU 1 holds %+v, want one job numbered after the simulated weeks'", lives[0].GPUs[1].Jobs)
	}
	if _, err := ReadInfo(dir); err != nil {
		t.Errorf("the demo directory is not one for demo serve: %v", err)
	}
	// The simulated Slurm's view of the snapshots' moment is beside them,
	// for gpuacct free and status --slurm-file, and they are printed.
	view, err := slurmstate.ReadFile(SlurmFile(dir))
	if err != nil {
		t.Fatal(err)
	}
	var held, used []int
	for i, l := range lives {
		n := 0
		for _, g := range l.GPUs {
			if len(g.Jobs) > 0 {
				n++
			}
		}
		held = append(held, n)
		if i < len(view.Nodes) {
			used = append(used, view.Nodes[i].GPUsUsed)
		}
	}
	if len(view.Nodes) != 2 || view.Nodes[1].Condition != slurmstate.Draining || cmp.Diff(held, used) != "" {
		t.Errorf("slurm.json: %+v; want gpu02 draining and the GPUs held %v of the snapshots", view, held)
	}
	for _, cmd := range []string{"free", "status"} {
		if w := "\n    /opt/bin/gpuacct " + cmd + " " + CLIFlags(dir) + "\n"; !strings.Contains(s, w) {
			t.Errorf("output lacks %q:\n%s", w, s)
		}
	}
}
