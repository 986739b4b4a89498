package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/store"
)

// jobGPU is a GPU of a test job: its idle share of sampled time, its
// peak and a series busy (util) up to busyTo seconds into the job, idle
// after.
func jobGPU(node string, idx int64, sampleS, idleS, util float64, busyTo, elapsed int64, quality map[string]uint64) GPUStat {
	i := idx
	mean, peak := util*float64(busyTo)/float64(elapsed), util
	mem, total := 20000.0, 81920.0
	g := GPUStat{Node: node, Index: &i, UUID: "GPU-x", Source: "aggregate", SampleS: sampleS, IdleS: idleS,
		UtilMean: &mean, UtilMax: &peak, MemMaxMiB: &mem, MemTotalMiB: &total, Quality: quality}
	const step = 60
	for s := int64(0); s < elapsed; s += step {
		u := 0.0
		if s < busyTo {
			u = util
		}
		g.Series = append(g.Series, Point{T: (jobStart + s) * 1000, Util: &u, Interval: step})
	}
	return g
}

const jobStart = 1772445600 // 2026-03-02 10:00 UTC

func jobDetail(state string, exit int64, nodes []string, gpus ...GPUStat) *Detail {
	const elapsed = 3600
	end := int64(jobStart + elapsed)
	det := &Detail{Now: time.Unix(end+600, 0), Job: JobRow{Cluster: "c1", JobID: 42, User: "alice", Account: "physics", Partition: "gpu",
		Nodes: strings.Join(nodes, ","), GPUs: int64(len(gpus)), Start: jobStart, End: &end, State: state,
		Usage: Usage{AllocS: int64(len(gpus)) * elapsed, SampleS: float64(len(gpus)) * elapsed}}}
	for _, n := range nodes {
		code := exit
		det.Nodes = append(det.Nodes, NodePart{Node: n, JobNodeRow: store.JobNodeRow{GPUs: int64(len(gpus) / len(nodes)), ExitCode: &code}})
	}
	for _, g := range gpus {
		det.Job.UsedS += *g.UtilMean / 100 * g.SampleS
		det.Job.IdleS += g.IdleS
	}
	det.GPUs = gpus
	det.Notes = notes(det)
	return det
}

// ignored marks det's job ignored for reason ("": none recorded), as
// gpuacct ignore or a comment tag leaves it.
func ignored(det *Detail, reason string) *Detail {
	det.Job.Ignored = true
	if reason != "" {
		det.Job.IgnoreReason = &reason
	}
	det.Notes = notes(det)
	return det
}

// TestJobNotes holds `gpuacct job`'s text to its golden files
// (testdata/job/NAME.txt, -update): each GPU's own idle share, "1 GPU",
// a job busy until it failed not sent to check CUDA, one line per reason
// metrics were missing, the exit code, an ignored job said under the
// title with its reason, who and when.
func TestJobNotes(t *testing.T) {
	lost := map[string]uint64{"gpu_util: ERROR_GPU_IS_LOST": 3, "power: ERROR_GPU_IS_LOST": 3, "temp: ERROR_GPU_IS_LOST": 2,
		"power: ERROR_NOT_SUPPORTED": 60, "energy_counter_reset": 1}
	for _, tc := range []struct {
		name string
		det  *Detail
	}{
		{"one-idle-gpu", jobDetail("completed", 0, []string{"g1"}, jobGPU("g1", 0, 3600, 3600, 0, 0, 3600, nil))},
		{"idle-gpus-each-own-share", jobDetail("completed", 0, []string{"g1"},
			jobGPU("g1", 0, 3600, 3600, 0, 0, 3600, nil), jobGPU("g1", 1, 3600, 2700, 0, 0, 3600, nil), jobGPU("g1", 2, 3600, 1900, 0, 0, 3600, nil))},
		{"idle-gpus-same-share", jobDetail("completed", 0, []string{"g1"},
			jobGPU("g1", 0, 3600, 3600, 0, 0, 3600, nil), jobGPU("g1", 1, 3600, 3600, 0, 0, 3600, nil))},
		{"busy-until-failed", jobDetail("failed", 1, []string{"g1"},
			jobGPU("g1", 0, 3600, 2400, 90, 1200, 3600, nil), jobGPU("g1", 1, 3600, 2400, 85, 1200, 3600, nil))},
		{"busy-then-idle-completed", jobDetail("completed", 0, []string{"g1"}, jobGPU("g1", 0, 3600, 3000, 90, 600, 3600, nil))},
		{"missing-metrics", jobDetail("completed", 0, []string{"g1"},
			jobGPU("g1", 0, 3600, 0, 80, 3600, 3600, lost), jobGPU("g1", 1, 3600, 0, 80, 3600, 3600, map[string]uint64{"power: ERROR_GPU_IS_LOST": 1}))},
		{"exit-codes-per-node", jobDetail("failed", 2, []string{"g1", "g2"},
			jobGPU("g1", 0, 3600, 0, 80, 3600, 3600, nil), jobGPU("g2", 0, 3600, 0, 80, 3600, 3600, nil))},
		{"ignored", ignored(jobDetail("completed", 0, []string{"g1"}, jobGPU("g1", 0, 3600, 0, 80, 3600, 3600, nil)),
			"benchmark of the new node (by bob, 2026-03-02 12:00Z)")},
		{"ignored-no-reason", ignored(jobDetail("completed", 0, []string{"g1"}, jobGPU("g1", 0, 3600, 0, 80, 3600, 3600, nil)), "")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "exit-codes-per-node" {
				c := int64(0)
				tc.det.Nodes[0].ExitCode = &c
			}
			var b bytes.Buffer
			if err := WriteJobText(&b, tc.det, &teams.Mapping{}, time.UTC, 100); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join("testdata", "job", tc.name+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("%s (-want +got):\n%s", path, diff)
			}
		})
	}
}
