package board

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

func TestCollector(t *testing.T) {
	dir := t.TempDir()
	writeLive(t, dir, record.LiveFileName("n1"), live("n1",
		gpu(0), gpu(90, 7), idleFor(gpu(0, 8), 2*time.Hour),
		withProcs(gpu(50, 9), record.LiveProc{PID: 1, Job: 9}, record.LiveProc{PID: 2, User: "bob", Foreign: true}, record.LiveProc{PID: 3, Job: 4})))
	old := live("n3", gpu(0))
	old.Time = now.Add(-2 * time.Minute)
	writeLive(t, dir, record.LiveFileName("n3"), old)
	slurmFails := false
	clock := now
	src := NewSource(SourceOptions{
		LiveDir: dir,
		Slurm: func(ctx context.Context) (slurmstate.State, error) {
			if slurmFails {
				return slurmstate.State{}, errors.New("scontrol: timed out")
			}
			return *slurm([]slurmstate.Node{snode("n1", slurmstate.Mixed, 4), snode("n2", slurmstate.Idle, 2), snode("n3", slurmstate.Idle, 1)}), nil
		},
		Now: func() time.Time { return clock },
	})
	src.RefreshSlurm(context.Background())
	c := NewCollector(src, time.Hour)

	want := `
# HELP gpuacct_board_foreign_processes Processes running outside their GPU's allocation, or on a GPU no job holds, on fresh nodes.
# TYPE gpuacct_board_foreign_processes gauge
gpuacct_board_foreign_processes 2
# HELP gpuacct_board_free_gpus Free GPUs now by model and partition, those on reserved nodes included (a node in two partitions counts in both).
# TYPE gpuacct_board_free_gpus gauge
gpuacct_board_free_gpus{model="NVIDIA H100",partition="gpu"} 1
# HELP gpuacct_board_gpus GPUs on the live board by state (every state, 0 included).
# TYPE gpuacct_board_gpus gauge
gpuacct_board_gpus{state="booked"} 0
gpuacct_board_gpus{state="busy"} 1
gpuacct_board_gpus{state="down"} 0
gpuacct_board_gpus{state="drained"} 0
gpuacct_board_gpus{state="foreign"} 1
gpuacct_board_gpus{state="free"} 1
gpuacct_board_gpus{state="idle"} 1
gpuacct_board_gpus{state="reserved"} 0
gpuacct_board_gpus{state="stale"} 3
# HELP gpuacct_board_idle_gpus_over_threshold Allocated GPUs idle for longer than board.idle_alert.
# TYPE gpuacct_board_idle_gpus_over_threshold gauge
gpuacct_board_idle_gpus_over_threshold 1
# HELP gpuacct_board_slurm_up 1 when the board holds Slurm's view of nodes and reservations, 0 when Slurm was unreachable or is not asked.
# TYPE gpuacct_board_slurm_up gauge
gpuacct_board_slurm_up 1
# HELP gpuacct_board_snapshot_age_seconds Age of each node's newest live snapshot (absent for a node that has none).
# TYPE gpuacct_board_snapshot_age_seconds gauge
gpuacct_board_snapshot_age_seconds{node="n1"} 5
gpuacct_board_snapshot_age_seconds{node="n3"} 120
# HELP gpuacct_board_stale_nodes Nodes with no live snapshot newer than 3 agent intervals.
# TYPE gpuacct_board_stale_nodes gauge
gpuacct_board_stale_nodes 2
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(registryOf(t, c)); err != nil || n != 16 {
		t.Errorf("a registry gathers %d metrics (%v), want 16", n, err)
	}

	// Slurm gone: slurm_up drops to 0 and the board is the agents' alone.
	slurmFails = true
	src.RefreshSlurm(context.Background())
	clock = clock.Add(time.Second) // past the Source's MaxAge: built anew
	if err := testutil.CollectAndCompare(c, strings.NewReader(`
# HELP gpuacct_board_slurm_up 1 when the board holds Slurm's view of nodes and reservations, 0 when Slurm was unreachable or is not asked.
# TYPE gpuacct_board_slurm_up gauge
gpuacct_board_slurm_up 0
# HELP gpuacct_board_stale_nodes Nodes with no live snapshot newer than 3 agent intervals.
# TYPE gpuacct_board_stale_nodes gauge
gpuacct_board_stale_nodes 1
`), "gpuacct_board_slurm_up", "gpuacct_board_stale_nodes"); err != nil {
		t.Error(err)
	}
}

// registryOf registers c on a registry of its own, as serve does, which
// also checks that its metrics are consistent with its descriptions.
func registryOf(t *testing.T, c prometheus.Collector) *prometheus.Registry {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(c); err != nil {
		t.Fatal(err)
	}
	return reg
}
