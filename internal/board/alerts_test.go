package board

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

func idleFor(g record.LiveGPU, d time.Duration) record.LiveGPU {
	t := now.Add(-d)
	g.IdleSince = &t
	return g
}

func TestAlerts(t *testing.T) {
	two := 2
	zero := 0
	one := 1
	snap := now.Add(-5 * time.Second)
	old := fresh("n9", gpu(0, 5))
	old.Time = now.Add(-10 * time.Minute)
	tests := []struct {
		name  string
		lives []record.Live
		slurm *slurmstate.State
		want  []Alert
	}{
		{name: "clean", lives: []record.Live{fresh("n1", gpu(90, 17), gpu(0), idleFor(gpu(0, 18), 59*time.Minute))}},
		{
			name: "foreign outside a job",
			lives: []record.Live{fresh("node1", gpu(90, 1), gpu(0), withProcs(gpu(90, 17),
				record.LiveProc{PID: 100, User: "alice", Job: 17, MemUsedMiB: 10},
				record.LiveProc{PID: 4242, User: "bob", MemUsedMiB: 10, Foreign: true}))},
			want: []Alert{{Kind: AlertForeign, Node: "node1", GPU: &two, Job: 17, User: "bob", Since: snap,
				Text: "node1 GPU 2: process 4242 of bob runs outside job 17 (alice)"}},
		},
		{
			name: "foreign on a GPU no job holds, two processes, one of another job",
			lives: []record.Live{fresh("node1", withProcs(gpu(30),
				record.LiveProc{PID: 7, User: "carol", Job: 99},
				record.LiveProc{PID: 8}))},
			want: []Alert{{Kind: AlertForeign, Node: "node1", GPU: &zero, User: "carol", Since: snap,
				Text: "node1 GPU 0: processes 7 of carol (job 99), 8 of an unknown user run on a GPU no job holds"}},
		},
		{
			name:  "idle past the alert, and just under it",
			lives: []record.Live{fresh("n1", idleFor(gpu(0, 18), 59*time.Minute), idleFor(gpu(0, 19), 61*time.Minute))},
			want: []Alert{{Kind: AlertIdle, Node: "n1", GPU: &one, Job: 19, User: "alice", Since: now.Add(-61 * time.Minute),
				Text: "n1 GPU 1: allocated to job 19 (alice) but idle for 1h1m0s (since 2026-11-26T04:59:00Z)"}},
		},
		{
			// the agent's word only: no IdleSince, no alert, whatever the utilization
			name:  "util 0 without IdleSince",
			lives: []record.Live{fresh("n1", gpu(0, 18))},
		},
		{
			name:  "stale node and a node Slurm lists with no snapshot",
			lives: []record.Live{old},
			slurm: slurm([]slurmstate.Node{snode("n9", slurmstate.Mixed, 1), snode("n2", slurmstate.Idle, 2)}),
			want: []Alert{
				{Kind: AlertStale, Node: "n2", Text: "n2: stale: no live snapshot (is its agent running, with agent.live_dir set?)"},
				{Kind: AlertStale, Node: "n9", Since: old.Time, Text: "n9: stale: last live snapshot 10m0s ago (2026-11-26T05:50:00Z)"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := Build(tt.lives, tt.slurm, nil, now)
			if d := cmp.Diff(tt.want, Alerts(&b, time.Hour)); d != "" {
				t.Errorf("alerts (-want +got):\n%s", d)
			}
		})
	}
}
