package slurm_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/testkit/slurm"
)

// readState reads the real cluster through the real scontrol.
func readState(t *testing.T, c *slurm.Cluster) slurmstate.State {
	t.Helper()
	r := slurmstate.Reader{Run: slurmstate.Exec{Env: c.Env()}.Run, Timeout: 30 * time.Second}
	st, err := r.Read(context.Background())
	if err != nil {
		t.Fatalf("read slurm state: %v", err)
	}
	return st
}

func findNode(t *testing.T, st slurmstate.State, name string) slurmstate.Node {
	t.Helper()
	for _, n := range st.Nodes {
		if n.Name == name {
			return n
		}
	}
	t.Fatalf("scontrol lists no node %s: %+v", name, st.Nodes)
	return slurmstate.Node{}
}

// quietly runs a Slurm command for cleanup, where a failure (nothing
// left to undo) is no test failure.
func quietly(c *slurm.Cluster, args ...string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_ = c.Cmd(ctx, "", "scontrol", args...).Run()
}

// TestSlurmStateFromScontrol: the board's reader over the real
// scontrol of Slurm 22.05 sees the harness's node with its four GPUs,
// a drain with its reason, and a reservation on the node. It drains the
// only node, so it holds the cluster alone (no other package's job waits
// on it); drain and reservation still last only as long as one read, and
// cleanup undoes both whatever fails.
func TestSlurmStateFromScontrol(t *testing.T) {
	c := slurm.Exclusive(t)
	node := c.Path("GPUSUITE_SLURM_NODE")

	n := findNode(t, readState(t, c), node)
	if n.GPUCount != 4 || !slices.Contains(n.Partitions, "gpu") || n.Condition == slurmstate.Down {
		t.Fatalf("node %s: %d GPUs in %v, %s; want 4 GPUs in gpu, up", node, n.GPUCount, n.Partitions, n.State)
	}

	t.Run("drain", func(t *testing.T) {
		resumed := false
		t.Cleanup(func() {
			if !resumed {
				quietly(c, "update", "nodename="+node, "state=resume")
			}
		})
		before := time.Now().Add(-time.Minute)
		c.Run(t, "", "scontrol", "update", "nodename="+node, "state=drain", "reason=board test")
		n := findNode(t, readState(t, c), node)
		c.Run(t, "", "scontrol", "update", "nodename="+node, "state=resume")
		resumed = true
		if !slices.Contains(n.Flags, "DRAIN") || (n.Condition != slurmstate.Drained && n.Condition != slurmstate.Draining) {
			t.Errorf("drained node: state %s, condition %s; want DRAIN, drained or draining", n.State, n.Condition)
		}
		// scontrol prints slurmctld's local time; the reader reads it in
		// this machine's zone, the same one.
		if n.Reason != "board test" || n.ReasonUser != "root" || n.ReasonTime.Before(before) || n.ReasonTime.After(time.Now().Add(time.Minute)) {
			t.Errorf("drained node: reason %q by %q at %v; want \"board test\" by root about now", n.Reason, n.ReasonUser, n.ReasonTime)
		}
		deadline := time.Now().Add(60 * time.Second)
		for n = findNode(t, readState(t, c), node); slices.Contains(n.Flags, "DRAIN"); n = findNode(t, readState(t, c), node) {
			if time.Now().After(deadline) {
				t.Fatalf("node still %s 60 s after resume", n.State)
			}
			time.Sleep(200 * time.Millisecond)
		}
	})

	t.Run("reservation", func(t *testing.T) {
		name := fmt.Sprintf("board-test-%d", os.Getpid())
		deleted := false
		t.Cleanup(func() {
			if !deleted {
				quietly(c, "delete", "reservation="+name)
			}
		})
		c.Run(t, "", "scontrol", "create", "reservation", "reservationname="+name, "starttime=now",
			"duration=10", "nodes=ALL", "users=root", "flags=ignore_jobs")
		st := readState(t, c)
		c.Run(t, "", "scontrol", "delete", "reservation="+name)
		deleted = true
		var got *slurmstate.Reservation
		for i := range st.Reservations {
			if st.Reservations[i].Name == name {
				got = &st.Reservations[i]
			}
		}
		if got == nil {
			t.Fatalf("reservation %s not read: %+v", name, st.Reservations)
		}
		if !slices.Equal(got.Nodes, []string{node}) || !slices.Equal(got.Users, []string{"root"}) ||
			!slices.Contains(got.Flags, "IGNORE_JOBS") || got.End.Sub(got.Start) != 10*time.Minute || got.State != "ACTIVE" {
			t.Errorf("reservation %+v; want on %s for root, IGNORE_JOBS, 10 minutes, ACTIVE", *got, node)
		}
		for _, r := range readState(t, c).Reservations {
			if r.Name == name {
				t.Errorf("reservation %s still read after its delete", name)
			}
		}
	})
}
