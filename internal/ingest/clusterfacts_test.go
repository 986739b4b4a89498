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
	if skipped != 4 {
		t.Errorf("skipped %d lines, want 4", skipped)
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

// factsSacctmgr is a fake sacctmgr for the cluster facts: it answers
// show event and show reservation with *events and *resvs (or fails, or
// hangs, by *mode) and records each event read's window.
type factsSacctmgr struct {
	t             *testing.T
	events, resvs *[]byte
	mode          string
	windows       [][2]string // Start=, End= of each show event
}

func (f *factsSacctmgr) run(ctx context.Context, args ...string) ([]byte, error) {
	joined := strings.Join(args, " ")
	if !strings.Contains(joined, "show event") && !strings.Contains(joined, "show reservation") {
		return nil, nil // the account tree: accounts.go's
	}
	if !strings.HasPrefix(joined, "-P -n show ") || !strings.Contains(joined, " Clusters=testcl ") {
		f.t.Errorf("sacctmgr args %q", args)
	}
	switch f.mode {
	case "fail":
		return nil, errors.New("slurmdbd unreachable")
	case "hang":
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if !strings.Contains(joined, "show event") {
		return *f.resvs, nil
	}
	if !strings.Contains(joined, "Format="+eventFormat) {
		f.t.Errorf("sacctmgr event args %q", args)
	}
	var w [2]string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "Start="); ok {
			w[0] = v
		}
		if v, ok := strings.CutPrefix(a, "End="); ok {
			w[1] = v
		}
	}
	f.windows = append(f.windows, w)
	return *f.events, nil
}

// knownCluster puts a node of testcl in the ledger, as its first job
// does: the cluster whose facts ingest then reads.
func knownCluster(t *testing.T, s *store.Ledger, now time.Time) {
	t.Helper()
	b, err := s.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Node("testcl", "node1"); err != nil {
		b.Rollback()
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// TestFillClusterFacts: on a new ledger, the first pass reads sacctmgr's
// events and reservations of the local cluster over the last month and a
// month ahead; each pass then reads from a day before the last read, and
// one more month back until a year is in. The facts are stored once however often
// they are read; sacctmgr failing or hanging past ingest.sacct_timeout
// leaves the stored facts as they were and the pass goes on.
func TestFillClusterFacts(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	e.cfg.Ingest.SacctTimeout.Duration = 2 * time.Second
	e.cfg.Cluster.Name = "testcl"
	events, err := os.ReadFile(filepath.Join("testdata", "sacctmgr", "events.txt"))
	if err != nil {
		t.Fatal(err)
	}
	resvs, err := os.ReadFile(filepath.Join("testdata", "sacctmgr", "reservations.txt"))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	fake := &factsSacctmgr{t: t, events: &events, resvs: &resvs}
	pass := func() {
		t.Helper()
		in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(),
			Sacctmgr: fake.run, SacctLocation: time.UTC})
		if _, err := in.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	pass() // no cluster in the ledger yet: nothing to ask
	if len(fake.windows) != 0 {
		t.Errorf("sacctmgr asked for a ledger with no cluster: %v", fake.windows)
	}
	knownCluster(t, s, now)
	read := func() store.ClusterFacts {
		t.Helper()
		f, err := s.ClusterFactsIn(context.Background(), nil, 0, now.Unix()+86400)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ts := func(t time.Time) string { return t.Format("2006-01-02T15:04:05") }
	// The first pass reads the last month and a month ahead, then a
	// month before; each next pass from a day before the last read, and
	// one more month back, until a year is in.
	forward := [2]string{ts(now.Add(-clusterFactsOverlap)), ts(now.Add(clusterFactsAhead))}
	want := [][2]string{{ts(now.Add(-clusterFactsStep)), ts(now.Add(clusterFactsAhead))}}
	back, until := now.Add(-clusterFactsStep), now.Add(-clusterFactsBackfill)
	passes := 0
	for {
		b := back.Add(-clusterFactsStep)
		if b.Before(until) {
			b = until
		}
		want = append(want, [2]string{ts(b), ts(back.Add(clusterFactsOverlap))})
		back = b
		passes++
		if !back.After(until) {
			break
		}
		want = append(want, forward)
	}
	for range passes {
		pass()
	}
	first := read()
	if len(first.Events) != 4 || len(first.Reservations) != 2 {
		t.Fatalf("after the backfill: %d events, %d reservations; want 4 and 2", len(first.Events), len(first.Reservations))
	}
	pass()
	if d := cmp.Diff(first, read()); d != "" {
		t.Errorf("another read changed the facts (-first +second):\n%s", d)
	}
	want = append(want, forward) // the backfill done: forward only
	if d := cmp.Diff(want, fake.windows); d != "" {
		t.Errorf("windows asked (-want +got):\n%s", d)
	}
	for _, m := range []string{"fail", "hang"} {
		fake.mode = m
		pass()
		if d := cmp.Diff(first, read()); d != "" {
			t.Errorf("sacctmgr %s changed the facts (-before +after):\n%s", m, d)
		}
	}
}

// TestClusterFactsWindowMoves: once Slurm lists no reservation any more
// (the last one ended long ago) and passes are days apart, each read
// still starts a day before the previous one, not at the last fact
// seen; and a reservation deleted in Slurm goes from the ledger.
func TestClusterFactsWindowMoves(t *testing.T) {
	e := newEnv(t)
	s := e.open(t)
	defer s.Close()
	e.cfg.Cluster.Name = "testcl"
	now := time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)
	ts := func(t time.Time) string { return t.Format("2006-01-02T15:04:05") }
	events := []byte("testcl||2025-01-01T00:00:00|Unknown|0|gres/gpu=4|\n")
	resvs := []byte("testcl|7|2026-11-26T11:00:00|2026-11-26T12:00:00||node1|gres/gpu=4|soon\n")
	fake := &factsSacctmgr{t: t, events: &events, resvs: &resvs}
	knownCluster(t, s, now)
	b, err := s.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	// A ledger whose facts were read up to now already.
	if err := b.SetClusterFacts(store.ClusterFacts{From: now.Add(-time.Hour).Unix(), To: now.Unix(), Clusters: []string{"testcl"},
		Marks: &store.FactsMarks{Read: now.Unix(), Back: now.Add(-clusterFactsBackfill).Unix(), Until: now.Add(-clusterFactsBackfill).Unix()}}); err != nil {
		t.Fatal(err)
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
	var want [][2]string
	for i := range 6 {
		at := now.Add(time.Duration(i) * 10 * 24 * time.Hour)
		if i == 1 {
			resvs = nil // deleted in Slurm, or long over: no longer listed
		}
		in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return at }, UID: os.Getuid(),
			Sacctmgr: fake.run, SacctLocation: time.UTC})
		if _, err := in.Pass(context.Background()); err != nil {
			t.Fatal(err)
		}
		last := now
		if i > 0 {
			last = at.Add(-10 * 24 * time.Hour)
		}
		want = append(want, [2]string{ts(last.Add(-clusterFactsOverlap)), ts(at.Add(clusterFactsAhead))})
	}
	if d := cmp.Diff(want, fake.windows); d != "" {
		t.Errorf("windows asked (-want +got):\n%s", d)
	}
	f, err := s.ClusterFactsIn(context.Background(), nil, now.Unix(), now.Add(100*24*time.Hour).Unix())
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Reservations) != 0 || len(f.Events) != 1 {
		t.Errorf("facts after the reservation went: %d reservations, %d events; want none and the cluster's row", len(f.Reservations), len(f.Events))
	}
}
