package ingest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

func unix(s string) int64 {
	t, err := time.Parse("2006-01-02T15:04:05", s)
	if err != nil {
		panic(err)
	}
	return t.Unix()
}

func TestParseSlurmEvents(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "sacctmgr", "events.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, skipped, err := parseSlurmEvents(strings.ReplaceAll(string(out), "\n", "\r\n"), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.SlurmEvent{
		{Cluster: "testcl", Start: unix("2026-11-20T10:00:00"), GPUs: 4},
		{Cluster: "testcl", Node: "node1", Start: unix("2026-11-25T09:30:00"), End: unix("2026-11-25T10:15:00"), State: 513, Reason: "maint: fan|swap", GPUs: 4},
		{Cluster: "testcl", Node: "node1", Start: unix("2026-11-25T11:00:00"), State: 1, Reason: "not responding", GPUs: 4},
		{Cluster: "testcl", Node: "node6", Start: unix("2026-11-25T13:00:00"), State: 4097, Reason: "powered down, no GPUs"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
	if skipped != 5 {
		t.Errorf("skipped %d lines, want 5", skipped)
	}
}

func TestParseSlurmReservations(t *testing.T) {
	out, err := os.ReadFile(filepath.Join("testdata", "sacctmgr", "reservations.txt"))
	if err != nil {
		t.Fatal(err)
	}
	got, skipped, err := parseSlurmReservations(string(out), time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.SlurmReservation{
		{Cluster: "testcl", ID: 3, Name: "maint window", Start: unix("2026-11-25T14:00:00"), End: unix("2026-11-25T16:00:00"), Flags: "MAINT,SPEC_NODES", Nodes: "node[1-2]", GPUs: 8},
		{Cluster: "testcl", ID: 4, Name: "cpus only|odd name", Start: unix("2026-11-26T08:00:00"), End: unix("2026-11-26T09:00:00"), Nodes: "node1"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("reservations (-want +got):\n%s", d)
	}
	if skipped != 3 {
		t.Errorf("skipped %d lines, want 3", skipped)
	}
}

func TestTresGPUs(t *testing.T) {
	for _, c := range []struct {
		in   string
		want int64
	}{
		{"cpu=64,mem=500G,node=1,billing=64,gres/gpu=8", 8},
		{"gres/gpu:a100=4,gres/gpu=4", 4},
		{"gres/gpu:a100=4", 0},
		{"cpu=16", 0},
		{"", 0},
		{"gres/gpu=-1", 0},
		{"gres/gpu=x", 0},
		{" gres/gpu=2 ", 2},
	} {
		t.Run(c.in, func(t *testing.T) {
			if got := tresGPUs(c.in); got != c.want {
				t.Errorf("tresGPUs(%q) = %d, want %d", c.in, got, c.want)
			}
		})
	}
}

// TestFillClusterFacts: a pass asks sacctmgr for events and reservations
// from the year before on a new ledger to a month ahead, then from a day
// before the last read; the facts are stored once however often they are
// read; sacctmgr failing or hanging past ingest.sacct_timeout leaves the
// stored facts as they were and the pass goes on.
func TestFillClusterFacts(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	e.cfg.Ingest.SacctTimeout.Duration = 2 * time.Second
	events, err := os.ReadFile(filepath.Join("testdata", "sacctmgr", "events.txt"))
	if err != nil {
		t.Fatal(err)
	}
	resvs, err := os.ReadFile(filepath.Join("testdata", "sacctmgr", "reservations.txt"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	var starts []string
	mode := "ok"
	sacctmgr := func(ctx context.Context, args ...string) ([]byte, error) {
		joined := strings.Join(args, " ")
		if !strings.Contains(joined, "show event") && !strings.Contains(joined, "show reservation") {
			return nil, nil // the account tree: accounts.go's
		}
		if !strings.HasPrefix(joined, "-P -n show ") || !strings.Contains(joined, "End="+now.Add(clusterFactsAhead).Format("2006-01-02T15:04:05")) {
			t.Errorf("sacctmgr args %q", args)
		}
		switch mode {
		case "fail":
			return nil, errors.New("slurmdbd unreachable")
		case "hang":
			<-ctx.Done()
			return nil, ctx.Err()
		}
		for _, a := range args {
			if strings.HasPrefix(a, "Start=") && strings.Contains(joined, "show event") {
				starts = append(starts, strings.TrimPrefix(a, "Start="))
			}
		}
		if strings.Contains(joined, "show event") {
			if !strings.Contains(joined, "Format="+eventFormat) {
				t.Errorf("sacctmgr event args %q", args)
			}
			return events, nil
		}
		return resvs, nil
	}
	pass := func() {
		t.Helper()
		in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(),
			Sacctmgr: sacctmgr, SacctLocation: time.UTC})
		if _, err := in.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	read := func() store.ClusterFacts {
		t.Helper()
		f, err := s.ClusterFactsIn(context.Background(), nil, 0, now.Unix()+86400)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	pass()
	first := read()
	if len(first.Events) != 4 || len(first.Reservations) != 2 {
		t.Fatalf("after the first pass: %d events, %d reservations; want 4 and 2", len(first.Events), len(first.Reservations))
	}
	pass()
	if d := cmp.Diff(first, read()); d != "" {
		t.Errorf("a second read changed the facts (-first +second):\n%s", d)
	}
	want := []string{now.Add(-clusterFactsBackfill).Format("2006-01-02T15:04:05"), now.Add(-clusterFactsOverlap).Format("2006-01-02T15:04:05")}
	if d := cmp.Diff(want, starts); d != "" {
		t.Errorf("windows asked (-want +got):\n%s", d)
	}
	for _, m := range []string{"fail", "hang"} {
		mode = m
		pass()
		if d := cmp.Diff(first, read()); d != "" {
			t.Errorf("sacctmgr %s changed the facts (-before +after):\n%s", m, d)
		}
	}
}
