package board

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

func TestCollector(t *testing.T) {
	dir := t.TempDir()
	writeLive(t, dir, record.LiveFileName("n1"), fresh("n1",
		gpu(0), gpu(90, 7), idleFor(gpu(0, 8), 2*time.Hour),
		withProcs(gpu(50, 9), record.LiveProc{PID: 1, Job: 9}, record.LiveProc{PID: 2, User: "bob", Foreign: true}, record.LiveProc{PID: 3, Job: 4})))
	old := fresh("n3", gpu(0))
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
# HELP gpuacct_board_age_seconds Age of the board served: under a second or two while boards are built, growing while they cannot be (a hung live directory or ledger).
# TYPE gpuacct_board_age_seconds gauge
gpuacct_board_age_seconds 0
# HELP gpuacct_board_foreign_processes Processes running outside their GPU's allocation, or on a GPU no job holds, on fresh nodes.
# TYPE gpuacct_board_foreign_processes gauge
gpuacct_board_foreign_processes 2
# HELP gpuacct_board_free_gpus Free GPUs now (board.IsFree: reserved and booked ones are not) by model and partition (a node in two partitions counts in both).
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
# HELP gpuacct_board_old 1 when no board could be built for this scrape in time and the last one built is served, aged to now; 0 otherwise.
# TYPE gpuacct_board_old gauge
gpuacct_board_old 0
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
	if n, err := testutil.GatherAndCount(registryOf(t, c)); err != nil || n != 18 {
		t.Errorf("a registry gathers %d metrics (%v), want 18", n, err)
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

// TestCollectorOldBoard: while no board can be built (a hung /data), the
// last one is served aged to the scrape's time: its snapshots' ages grow,
// nodes gone silent since count stale, and the board says it is old.
func TestCollectorOldBoard(t *testing.T) {
	dir := t.TempDir()
	l := fresh("n1", gpu(0), idleFor(gpu(0, 8), 30*time.Minute))
	l.Interval = 3600 // stale 3 h after it was taken
	writeLive(t, dir, record.LiveFileName("n1"), l)
	var clock atomic.Int64
	clock.Store(now.UnixNano())
	hang, release := make(chan struct{}, 1), make(chan struct{})
	t.Cleanup(func() { close(release) })
	src := NewSource(SourceOptions{LiveDir: dir, MaxAge: time.Second,
		// Short, so the scrape is given the old board at once; the build
		// itself stays hung until the test ends.
		BuildTimeout: 50 * time.Millisecond,
		Notes: func(ctx context.Context, at time.Time) ([]Note, error) {
			select {
			case <-hang:
				<-release // ignores its context, as a read of a hung mount does
			default:
			}
			return nil, nil
		},
		Now: func() time.Time { return time.Unix(0, clock.Load()).UTC() },
	})
	c := NewCollector(src, 40*time.Minute)
	names := []string{"gpuacct_board_old", "gpuacct_board_age_seconds", "gpuacct_board_stale_nodes",
		"gpuacct_board_snapshot_age_seconds", "gpuacct_board_idle_gpus_over_threshold", "gpuacct_board_gpus"}
	want := func(old, boardAge, stale, snapAge, idle, free, idleGPUs, staleGPUs int) string {
		return fmt.Sprintf(`
# HELP gpuacct_board_age_seconds Age of the board served: under a second or two while boards are built, growing while they cannot be (a hung live directory or ledger).
# TYPE gpuacct_board_age_seconds gauge
gpuacct_board_age_seconds %d
# HELP gpuacct_board_gpus GPUs on the live board by state (every state, 0 included).
# TYPE gpuacct_board_gpus gauge
gpuacct_board_gpus{state="booked"} 0
gpuacct_board_gpus{state="busy"} 0
gpuacct_board_gpus{state="down"} 0
gpuacct_board_gpus{state="drained"} 0
gpuacct_board_gpus{state="foreign"} 0
gpuacct_board_gpus{state="free"} %d
gpuacct_board_gpus{state="idle"} %d
gpuacct_board_gpus{state="reserved"} 0
gpuacct_board_gpus{state="stale"} %d
# HELP gpuacct_board_idle_gpus_over_threshold Allocated GPUs idle for longer than board.idle_alert.
# TYPE gpuacct_board_idle_gpus_over_threshold gauge
gpuacct_board_idle_gpus_over_threshold %d
# HELP gpuacct_board_old 1 when no board could be built for this scrape in time and the last one built is served, aged to now; 0 otherwise.
# TYPE gpuacct_board_old gauge
gpuacct_board_old %d
# HELP gpuacct_board_snapshot_age_seconds Age of each node's newest live snapshot (absent for a node that has none).
# TYPE gpuacct_board_snapshot_age_seconds gauge
gpuacct_board_snapshot_age_seconds{node="n1"} %d
# HELP gpuacct_board_stale_nodes Nodes with no live snapshot newer than 3 agent intervals.
# TYPE gpuacct_board_stale_nodes gauge
gpuacct_board_stale_nodes %d
`, boardAge, free, idleGPUs, staleGPUs, idle, old, snapAge, stale)
	}
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(0, 0, 0, 5, 0, 1, 1, 0)), names...); err != nil {
		t.Errorf("a good build: %v", err)
	}

	// /data hangs; 20 min on, the GPU idle since 30 min before is idle
	// for 50 min, past the 40 min alert, and the snapshot not yet stale.
	hang <- struct{}{}
	clock.Add(int64(20 * time.Minute))
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(1, 1200, 0, 1205, 1, 1, 1, 0)), names...); err != nil {
		t.Errorf("20 min into a hung build: %v", err)
	}
	// 3 h on the snapshot is stale, its GPUs too, and its idle GPU no
	// longer counted idle (a stale node raises one alert, stale).
	clock.Add(int64(3 * time.Hour))
	if err := testutil.CollectAndCompare(c, strings.NewReader(want(1, 12000, 1, 12005, 0, 0, 0, 2)), names...); err != nil {
		t.Errorf("3 h into a hung build: %v", err)
	}
}
