package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/sim"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// billedEvFile is an event of job on node's GPUs 0 and 1 in partition gpu.
func billedEvFile(t *testing.T, node string, job uint64, kind record.Kind, at time.Time) forged {
	t.Helper()
	ev := record.Event{Schema: record.EventSchema, Kind: kind, Time: at, Source: "prolog", Cluster: "c1", Node: node}
	ev.Job.ID, ev.Job.User, ev.Job.Account, ev.Job.Partition = job, "alice", "physics", "gpu"
	for i := range 2 {
		ev.Job.GPUs = append(ev.Job.GPUs, i)
		ev.GPUs = append(ev.GPUs, gpuIdentity(sim.UUID(node, i), &i))
	}
	ev.Key = record.EventKey("c1", job, 0, node, kind)
	data, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	return forged{node, record.EventFileName("c1", job, 0, node, kind), data}
}

// TestPassBillsByPartitionWeights: the weights scontrol lists are kept
// and bill a job's GPUs (2 GPUs × 3.0 × an hour); without scontrol, the
// [billing] weight of the GPU model does; a scontrol that fails bills
// nothing and fails no pass.
func TestPassBillsByPartitionWeights(t *testing.T) {
	part := "PartitionName=gpu AllowGroups=ALL Nodes=gpu001 State=UP TRES=cpu=8,mem=7800M,node=1,billing=8,gres/gpu=2 TRESBillingWeights=CPU=1.0,GRES/gpu=3.0\n" +
		"PartitionName=debug AllowGroups=ALL Nodes=gpu001 State=UP\n"
	for _, tc := range []struct {
		name     string
		scontrol Sacct
		config   map[string]float64
		want     float64
	}{
		{"scontrol's weights", func(_ context.Context, args ...string) ([]byte, error) {
			switch strings.Join(args, " ") {
			case "show partition --oneliner":
				return []byte(part), nil
			case "show config":
				return []byte("PriorityType            = priority/multifactor\nPriorityFlags           = \n"), nil
			}
			return nil, errors.New("unexpected scontrol call")
		}, nil, 3 * 2 * 3600},
		{"config's weights", nil, map[string]float64{"NVIDIA H100 80GB HBM3": 0.5}, 0.5 * 2 * 3600},
		{"scontrol fails", func(context.Context, ...string) ([]byte, error) { return nil, errors.New("slurmctld down") }, nil, 0},
		{"no weights", nil, nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			e.cfg.Billing.Weights = tc.config
			s := e.open(t)
			defer s.Close()
			pass := func(now time.Time) {
				t.Helper()
				sacctmgr := func(context.Context, ...string) ([]byte, error) { return nil, nil }
				in := New(Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(),
					Sacctmgr: sacctmgr, Scontrol: tc.scontrol})
				if _, err := in.Pass(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
			e.put(t, billedEvFile(t, "gpu001", 7, record.JobStart, t0))
			pass(t0.Add(time.Minute))
			e.put(t, billedEvFile(t, "gpu001", 7, record.JobEnd, t0.Add(time.Hour)))
			pass(t0.Add(2 * time.Hour))
			var got float64
			err := s.Facts(context.Background(), store.FactQuery{Grain: store.Daily, From: t0.Add(-48 * time.Hour).Unix(), To: t0.Add(48 * time.Hour).Unix()},
				func(r *store.FactRow) { got += r.Billing })
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("billing %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReconcileSlurmBilling: sacct's AllocTRES billing=N becomes the
// run's rate where its partition had Slurm weights at its start (N × the
// seconds sacct gives), whatever the estimate from its GPUs was; without
// weights Slurm's N (its CPUs) bills nothing.
func TestReconcileSlurmBilling(t *testing.T) {
	s0 := t0.Add(time.Minute)
	ts := func(d time.Duration) string { return s0.Add(d).Format(sacctTS) }
	for _, tc := range []struct {
		name    string
		weights string
		tres    string
		want    []string
	}{
		{"Slurm's billing", "CPU=1.0,GRES/gpu=2.0", "billing=30,cpu=4,gres/gpu=1,mem=8G,node=1", []string{"101|18000"}},
		{"no billing in AllocTRES: the estimate", "CPU=1.0,GRES/gpu=2.0", "cpu=4,gres/gpu=1,mem=8G,node=1", []string{"101|1200"}},
		{"no weights", "", "billing=4,cpu=4,gres/gpu=1,mem=8G,node=1", []string{"101|0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t)
			s := e.open(t)
			b, err := s.Begin(context.Background(), s0)
			if err != nil {
				t.Fatal(err)
			}
			if err := b.SetBillingWeights("c1", store.BillingSlurm, s0.Add(-time.Hour).Unix(), []store.BillingWeights{{Partition: "", Weights: tc.weights}}); err != nil {
				t.Fatal(err)
			}
			if err := b.Commit(); err != nil {
				t.Fatal(err)
			}
			hookLate(t, e, 101, 0, s0, s0.Add(10*time.Minute), 0)
			recs := []slurmRun{{id: 101, start: ts(0), end: ts(10 * time.Minute), state: "COMPLETED", exit: "0:0",
				resources: "4|02:30.000|8G||20|600|1|" + tc.tres, steps: [][2]string{{"batch", "1024K"}}}}
			var all []string
			now := s0.Add(time.Hour)
			deps := Deps{Store: s, Config: e.cfg, Log: quiet(), Now: func() time.Time { return now }, UID: os.Getuid(), SacctLocation: time.UTC,
				Sacct: fakeSacct(&recs, &all)}
			if _, err := New(deps).Pass(context.Background()); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, ledgerdb.Strings(t, s.Path, `SELECT job_id, CAST(billing AS INTEGER) FROM jobs ORDER BY job_id`)); d != "" {
				t.Errorf("billing (-want +got):\n%s", d)
			}
		})
	}
}
