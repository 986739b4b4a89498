package simcluster_test

import (
	"context"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/ingest"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/sim/simcluster"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

// Tolerances. Allocation, sample seconds, idle seconds and energy are
// sums of integers (or of whole multiples of the interval) on both sides
// and must be equal. Used GPU-seconds are a float sum of util × interval
// / 100 terms that the store adds in another order (per hour, per
// batch) than the truth: each addition may round by one ulp, so the
// relative error stays under terms × 2⁻⁵³ (about 10⁻¹¹ for a day of
// samples); 10⁻⁹ is tight and safe.
const usedTol = 1e-9

func near(got, want float64) bool {
	return math.Abs(got-want) <= usedTol*math.Max(1, math.Abs(want))
}

// ledger runs a small simulated cluster through the real agent and hooks,
// then one real ingest pass into a fresh ledger of the engine under test
// (ledgerdb.NewLedger); it returns the ledger's location.
func ledger(t *testing.T, o simcluster.Options) (simcluster.Result, string, ingest.Result) {
	t.Helper()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	o.NodeRoot = filepath.Join(dir, "nodes")
	o.Incoming = filepath.Join(dir, "incoming")
	t0 := time.Now()
	res, err := simcluster.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("simulated %d nodes × %d GPUs for %s: %d jobs, %d samples, %d files shipped in %s",
		o.Nodes, o.GPUsPerNode, o.Duration, len(res.Truth.Jobs), res.Truth.Samples, res.Shipped, time.Since(t0).Round(time.Millisecond))
	cfg := config.Default()
	cfg.Store.Path = filepath.Join(dir, "gpuacct.db")
	cfg.Store.URL = ledgerdb.NewLedger(t).URL
	cfg.Ingest.Incoming = o.Incoming
	cfg.Ingest.Quarantine = filepath.Join(dir, "quarantine")
	cfg.Ingest.Archive = filepath.Join(dir, "archive")
	cfg.Ingest.Keep = "delete"
	cfg.Ingest.Sacct = ""
	st, err := store.Open(context.Background(), store.Options{Path: cfg.Store.Path, URL: cfg.Store.URL})
	if err != nil {
		t.Fatal(err)
	}
	now := res.Truth.End.Add(time.Hour)
	t0 = time.Now()
	ir, err := ingest.New(ingest.Deps{Store: st, Config: cfg, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Now: func() time.Time { return now }, UID: os.Getuid()}).Pass(context.Background())
	st.Close()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("ingest: %+v in %s", ir, time.Since(t0).Round(time.Millisecond))
	// why files were set aside, the first few
	reasons, _ := filepath.Glob(filepath.Join(cfg.Ingest.Quarantine, "*", "*.reason"))
	for _, r := range reasons[:min(len(reasons), 5)] {
		b, _ := os.ReadFile(r)
		t.Logf("quarantined %s: %s", filepath.Base(r), b)
	}
	return res, cfg.Store.Location(), ir
}

// jobRow is what the reports hold of a job, in the truth's terms.
type jobRow struct {
	User, Account, Partition string
	GPUs                     int64
	Start, End               int64
	State                    string
	AllocS                   int64
	SampleS, IdleS           float64
	EnergyMJ                 int64
	Jobs                     int64
}

// 3 nodes × 4 GPUs for 6 simulated hours through the real agent and
// hooks, one real ingest pass: every job, every team and the cluster
// total read back through the report queries equal the ground truth.
func TestPipelineEqualsTruth(t *testing.T) {
	start := time.Date(2026, 3, 2, 6, 0, 0, 0, time.UTC)
	res, path, ir := ledger(t, simcluster.Options{Cluster: "sim", Nodes: 3, GPUsPerNode: 4, Start: start, Duration: 6 * time.Hour,
		JobsPerNode: 30, FaultEvery: 2 * time.Hour, Seed: 1})
	truth := res.Truth

	// The mix holds what the test is about, or it proves nothing.
	kinds := map[simcluster.Kind]int{}
	for _, j := range truth.Jobs {
		kinds[j.Kind]++
	}
	if len(truth.Jobs) < 60 || kinds[simcluster.Busy] == 0 || kinds[simcluster.Low] == 0 || kinds[simcluster.Idle] == 0 || kinds[simcluster.Failing] == 0 {
		t.Fatalf("job mix %v of %d jobs lacks a kind", kinds, len(truth.Jobs))
	}
	if truth.LostSamples == 0 || truth.Resets == 0 {
		t.Fatalf("no fault happened: %d lost samples, %d counter resets", truth.LostSamples, truth.Resets)
	}
	if want := int64(3 * 4 * 6 * 360); truth.Samples != want {
		t.Errorf("truth counts %d samples, want %d", truth.Samples, want)
	}
	if ir.Files != res.Shipped || ir.Quarantined != 0 || ir.Refused != 0 || ir.Duplicates != 0 || int64(ir.Samples) != truth.Samples {
		t.Errorf("ingest took %d files of %d shipped (quarantined %d, refused %d, duplicates %d), %d samples of %d",
			ir.Files, res.Shipped, ir.Quarantined, ir.Refused, ir.Duplicates, ir.Samples, truth.Samples)
	}

	ctx := context.Background()
	db, err := report.OpenDB(ctx, path, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	now := truth.End.Add(time.Hour)
	win := timespec.Window{Start: truth.Start, End: truth.End}

	t.Run("jobs", func(t *testing.T) {
		got := map[uint64]*report.JobRow{}
		if err := db.Jobs(ctx, report.JobsQuery{Window: win, Now: now}, func(j *report.JobRow) bool {
			got[uint64(j.JobID)] = j
			return true
		}); err != nil {
			t.Fatal(err)
		}
		if len(got) != len(truth.Jobs) {
			t.Errorf("%d jobs in the ledger, %d simulated", len(got), len(truth.Jobs))
		}
		for _, j := range truth.Jobs {
			r := got[j.ID]
			if r == nil {
				t.Errorf("job %d missing", j.ID)
				continue
			}
			state := "completed"
			if j.Exit != "0:0" {
				state = "failed"
			}
			want := jobRow{j.User, j.Account, j.Partition, int64(len(j.GPUs)), j.Start.Unix(), j.End.Unix(), state,
				j.AllocS, j.SampleS, j.IdleS, j.EnergyMJ, 1}
			have := jobRow{r.User, r.Account, r.Partition, r.GPUs, r.Start, endOf(r.End), r.State,
				r.AllocS, r.SampleS, r.IdleS, r.EnergyMJ, r.Jobs}
			if d := cmp.Diff(want, have); d != "" {
				t.Errorf("job %d (%s, lost samples %d, reset %v) -truth +ledger:\n%s", j.ID, j.Kind, j.LostSamples, j.Reset, d)
			}
			if !near(r.UsedS, j.UsedS) {
				t.Errorf("job %d: used %v GPU-s, truth %v", j.ID, r.UsedS, j.UsedS)
			}
		}
	})

	t.Run("teams and total", func(t *testing.T) {
		got := map[string]report.Usage{}
		var total report.Usage
		err := db.Facts(ctx, timespec.Buckets(report.HourWindow(win), timespec.None), report.Filter{}, false, func(f *report.Fact) {
			u := got[f.Account]
			u.Add(f.Usage)
			got[f.Account] = u
			total.Add(f.Usage)
		})
		if err != nil {
			t.Fatal(err)
		}
		check := func(name string, have report.Usage, want simcluster.Usage) {
			t.Helper()
			if have.AllocS != want.AllocS || have.Jobs != want.Jobs || have.SampleS != want.SampleS || have.IdleS != want.IdleS || have.EnergyMJ != want.EnergyMJ || !near(have.UsedS, want.UsedS) {
				t.Errorf("%s: ledger %+v\n truth %+v", name, have, want)
			}
		}
		var accounts []string
		for a := range truth.ByAccount {
			accounts = append(accounts, a)
		}
		sort.Strings(accounts)
		if len(got) != len(accounts) {
			t.Errorf("accounts in the ledger %v, simulated %v", got, accounts)
		}
		for _, a := range accounts {
			check(a, got[a], truth.ByAccount[a])
		}
		check("cluster", total, truth.Total)
		// The definition of energy (counter at the epilog − counter at the
		// prolog) and the samples' counter deltas differ only at the
		// edges: at most one interval at each end of each job × GPU, at
		// most 590 W, and what a reset hid.
		var gpus int64
		for _, j := range truth.Jobs {
			gpus += int64(len(j.GPUs))
		}
		bound := gpus * 2 * int64(truth.Interval/time.Second) * 590_000
		if d := truth.Total.DrawnMJ - total.EnergyMJ; d > bound || -d > bound {
			t.Errorf("energy from samples %d mJ, drawn %d mJ: apart by more than the edges (%d mJ)", total.EnergyMJ, truth.Total.DrawnMJ, bound)
		}
	})

	t.Run("job detail", func(t *testing.T) {
		// The agent's job × GPU aggregates: sample and idle seconds per
		// job, and energy from the prolog's counter reading to the
		// epilog's, exactly what the GPUs drew unless a reset hid some.
		checked := 0
		for _, j := range truth.Jobs {
			det, err := db.Job(ctx, truth.Cluster, report.JobSpec{ID: int64(j.ID)}, now)
			if err != nil {
				t.Fatalf("job %d: %v", j.ID, err)
			}
			var sampleS, idleS, kwh float64
			for _, g := range det.GPUs {
				if g.Source != "aggregate" || g.EnergyKWh == nil {
					t.Fatalf("job %d GPU %s: figures from %s, energy %v", j.ID, g.UUID, g.Source, g.EnergyKWh)
				}
				sampleS += g.SampleS
				idleS += g.IdleS
				kwh += *g.EnergyKWh
			}
			mj := kwh * 3.6e9
			if len(det.GPUs) != len(j.GPUs) || sampleS != j.AgentSampleS || idleS != j.AgentIdleS {
				t.Errorf("job %d: %d GPUs, %v sample s, %v idle s; truth %d, %v, %v", j.ID, len(det.GPUs), sampleS, idleS, len(j.GPUs), j.AgentSampleS, j.AgentIdleS)
			}
			if j.Reset {
				if mj > float64(j.DrawnMJ)+1 {
					t.Errorf("job %d: energy %v mJ after a counter reset, more than drawn (%d)", j.ID, mj, j.DrawnMJ)
				}
				continue
			}
			if math.Abs(mj-float64(j.DrawnMJ)) > 1e-3*float64(len(j.GPUs)) {
				t.Errorf("job %d (%s): aggregate energy %.3f mJ, drawn %d mJ", j.ID, j.Kind, mj, j.DrawnMJ)
			}
			checked++
		}
		if checked == 0 {
			t.Error("no job compared")
		}
	})
}

// The same options make the same cluster; another seed another one.
func TestPlanDeterministic(t *testing.T) {
	o := simcluster.Options{Nodes: 2, GPUsPerNode: 8, Start: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), Duration: 12 * time.Hour,
		JobsPerNode: 40, Seed: 5, NodeRoot: "unused", Incoming: "unused"}
	a, err := simcluster.Plan(o)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := simcluster.Plan(o)
	o.Seed = 6
	c, _ := simcluster.Plan(o)
	opt := cmp.Comparer(func(x, y *simcluster.Job) bool {
		return x.ID == y.ID && x.Node == y.Node && x.Start.Equal(y.Start) && x.End.Equal(y.End) && x.User == y.User && cmp.Equal(x.GPUs, y.GPUs)
	})
	if d := cmp.Diff(a, b, opt); d != "" {
		t.Errorf("same seed, other plan:\n%s", d)
	}
	if cmp.Equal(a, c, opt) {
		t.Error("another seed gave the same plan")
	}
	// Jobs never share a GPU, start in id order, and end in the span.
	busy := map[string][][2]int64{}
	for i, j := range a {
		if i > 0 && j.Start.Before(a[i-1].Start) {
			t.Errorf("job %d starts before job %d", j.ID, a[i-1].ID)
		}
		if !j.End.After(j.Start) || j.Start.Before(o.Start) || j.End.After(o.Start.Add(o.Duration)) {
			t.Errorf("job %d runs %s–%s", j.ID, j.Start, j.End)
		}
		for _, g := range j.GPUs {
			k := j.Node + "/" + string(rune('0'+g))
			for _, iv := range busy[k] {
				if j.Start.Unix() < iv[1] && iv[0] < j.End.Unix() {
					t.Errorf("job %d overlaps another job on %s", j.ID, k)
				}
			}
			busy[k] = append(busy[k], [2]int64{j.Start.Unix(), j.End.Unix()})
		}
	}
}

// Every job lasts at least one sampling interval, so that each gets a
// sample: at a 5 min interval, jobs of one to five minutes were planned,
// and the agent's aggregate of a job without a sample is quarantined.
func TestPlanJobsLastAnInterval(t *testing.T) {
	for _, iv := range []time.Duration{10 * time.Second, time.Minute, 3 * time.Minute, 5 * time.Minute} {
		t.Run(iv.String(), func(t *testing.T) {
			o := simcluster.Options{Nodes: 2, GPUsPerNode: 4, Start: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), Duration: 7 * 24 * time.Hour,
				Interval: iv, JobsPerNode: 200, Seed: 1, NodeRoot: "unused", Incoming: "unused"}
			jobs, err := simcluster.Plan(o)
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) < 100 {
				t.Fatalf("%d jobs planned", len(jobs))
			}
			for _, j := range jobs {
				if d := j.End.Sub(j.Start); d < max(time.Minute, iv) {
					t.Errorf("job %d lasts %s, under the %s interval", j.ID, d, iv)
				}
			}
		})
	}
}

func TestOptionsRefused(t *testing.T) {
	good := simcluster.Options{Nodes: 1, GPUsPerNode: 2, Start: time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC), Duration: time.Hour,
		JobsPerNode: 2, NodeRoot: "n", Incoming: "i"}
	for _, tc := range []struct {
		name string
		edit func(*simcluster.Options)
		want string
	}{
		{"no nodes", func(o *simcluster.Options) { o.Nodes = 0 }, "simulated cluster: 0 nodes × 2 GPUs: want at least one node of 1..64 GPUs"},
		{"too many GPUs", func(o *simcluster.Options) { o.GPUsPerNode = 65 }, "simulated cluster: 1 nodes × 65 GPUs: want at least one node of 1..64 GPUs"},
		{"fractional interval", func(o *simcluster.Options) { o.Interval = 1500 * time.Millisecond }, "simulated cluster: interval 1.5s is not a whole number of seconds"},
		{"ragged duration", func(o *simcluster.Options) { o.Duration = time.Hour + 5*time.Second }, "simulated cluster: duration 1h0m5s is not a whole number of intervals (10s)"},
		{"no jobs", func(o *simcluster.Options) { o.JobsPerNode = 0 }, "simulated cluster: 0 jobs per node"},
		{"no dirs", func(o *simcluster.Options) { o.Incoming = "" }, "simulated cluster: node root and incoming directory must be set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := good
			tc.edit(&o)
			_, err := simcluster.Run(context.Background(), o)
			if err == nil || err.Error() != tc.want {
				t.Errorf("got %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := simcluster.Plan(good); err != nil {
		t.Errorf("good options refused: %v", err)
	}
}

// endOf is a run's end, 0 while it runs (the truth's jobs all ended).
func endOf(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}
