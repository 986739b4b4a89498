package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// TestOneEnergy: a job has one energy and one mean power, and so has
// each of its GPUs: the GPUs' energies add up to the job's to the
// millijoule, and mean power × sampled time is energy, both for a job
// whose GPUs have an energy counter (each GPU's counter difference from
// the job's start to its end, the agent's aggregate, is the truth,
// though their power readings say more and the ledger's sample deltas
// a little less) and for one whose GPUs have none (power × time); the
// jobs and gpus exports give the same energies.
func TestOneEnergy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		counter bool
		// wantMJ is the job's energy: the aggregates' counter
		// differences of 300 W and 200 W over 304 s, or the power
		// readings' 350 W and 250 W over the 300 s sampled.
		wantMJ int64
	}{
		{"counter", true, (300 + 200) * 304 * 1000},
		{"no counter", false, (350 + 250) * 300 * 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := at(7200)
			loc := reportfixture.BuildLedger(t, []reportfixture.Job{
				{ID: 11, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: reportfixture.T0 + 100, End: reportfixture.T0 + 400},
			}, now)
			watts := [2]uint64{300, 200}
			counter := [2]uint64{1_000_000, 2_000_000}
			var samples []record.Sample
			for s := 90; s <= 400; s += 10 {
				for g := range 2 {
					counter[g] += watts[g] * 10 * 1000
					var c *uint64
					if tc.counter {
						v := counter[g]
						c = &v
					}
					job := uint64(11)
					if s < 100 {
						job = 0
					}
					samples = append(samples, fixtureSample(g, float64(s), job, 90, uint32(watts[g]+50)*1000, c))
				}
			}
			var aggs []record.JobGPU
			for g := range 2 {
				a := record.JobGPU{Seq: 1, Final: true, Cluster: "c1", Node: "gpu01", Job: 11, UUID: "GPU-gpu01-" + strconv.Itoa(g), Index: g,
					First: at(100), Last: at(400), Samples: 31, SampleSeconds: 300, UtilSeconds: 270, UtilMax: 90, MemMaxMiB: 100, MemTotalMiB: 81559}
				if tc.counter {
					a.EnergyMJ = watts[g] * 304 * 1000 // the agent's own window: a little more
				}
				aggs = append(aggs, a)
			}
			ingestInto(t, loc, now, &record.SegmentHeader{Cluster: "c1", Node: "gpu01", Seq: 1, Interval: 10, Start: at(90)}, samples, aggs...)
			db := openTest(t, loc)
			det, err := db.Job(context.Background(), "", JobSpec{ID: 11, Restart: -1}, now)
			if err != nil {
				t.Fatal(err)
			}
			if det.Job.EnergyMJ != tc.wantMJ {
				t.Errorf("job energy %d mJ, want %d", det.Job.EnergyMJ, tc.wantMJ)
			}
			// The time the energy was drawn in: a counter difference
			// spans the job (300 s), power × time the seconds sampled.
			span := func(sampleS float64) float64 {
				if tc.counter {
					return float64(det.Job.Elapsed(now))
				}
				return sampleS
			}
			var sum int64
			for _, g := range det.GPUs {
				sum += g.EnergyMJ
				if g.EnergyKWh == nil || int64(math.Round(*g.EnergyKWh*3.6e9)) != g.EnergyMJ {
					t.Errorf("GPU %s: %s kWh and %d mJ", g.UUID, optF(g.EnergyKWh, "%.9f"), g.EnergyMJ)
				}
				if g.PowerMeanW == nil || math.Abs(*g.PowerMeanW*span(g.SampleS)-float64(g.EnergyMJ)/1000) > 1e-6 {
					t.Errorf("GPU %s: mean power %s W × %v s is not its %d mJ", g.UUID, optF(g.PowerMeanW, "%.3f"), span(g.SampleS), g.EnergyMJ)
				}
			}
			if sum != det.Job.EnergyMJ {
				t.Errorf("GPUs' energies add up to %d mJ, the job's is %d", sum, det.Job.EnergyMJ)
			}

			// The JSON says the same, rounded: energies exact in mJ, mean
			// powers within their 0.1 W.
			var out bytes.Buffer
			if err := WriteJobJSON(&out, det, &teams.Mapping{}, ""); err != nil {
				t.Fatal(err)
			}
			var j struct {
				EnergyMJ   int64    `json:"energy_mj"`
				PowerMeanW *float64 `json:"power_mean_w"`
				GPUs       []struct {
					SampleS    float64  `json:"sample_s"`
					EnergyMJ   int64    `json:"energy_mj"`
					PowerMeanW *float64 `json:"power_mean_w"`
				} `json:"gpus_detail"`
			}
			if err := json.Unmarshal(out.Bytes(), &j); err != nil {
				t.Fatal(err)
			}
			sum = 0
			var drawnS float64
			for _, g := range j.GPUs {
				sum += g.EnergyMJ
				s := span(g.SampleS)
				drawnS += s
				if g.PowerMeanW == nil || math.Abs(*g.PowerMeanW*s-float64(g.EnergyMJ)/1000) > 0.05*s+1e-6 {
					t.Errorf("JSON GPU: mean power %s W × %v s is not its %d mJ", optF(g.PowerMeanW, "%.1f"), s, g.EnergyMJ)
				}
			}
			if sum != j.EnergyMJ || j.EnergyMJ != det.Job.EnergyMJ {
				t.Errorf("JSON: GPUs add up to %d mJ, the job's is %d (detail %d)", sum, j.EnergyMJ, det.Job.EnergyMJ)
			}
			// The exports say the same energies: the job's, and each GPU's.
			for _, kind := range []string{"jobs", "gpus"} {
				var csvOut bytes.Buffer
				if _, err := db.Export(context.Background(), ExportOptions{Kind: kind, Out: &csvOut, Now: now,
					Window: timespec.Window{Start: at(0), End: now}}); err != nil {
					t.Fatal(err)
				}
				recs, err := csv.NewReader(&csvOut).ReadAll()
				if err != nil {
					t.Fatal(err)
				}
				var got, want []string
				col := slices.Index(recs[0], "energy_mj")
				for _, r := range recs[1:] {
					got = append(got, r[col])
				}
				if kind == "jobs" {
					want = []string{strconv.FormatInt(det.Job.EnergyMJ, 10)}
				} else {
					for _, g := range det.GPUs {
						want = append(want, strconv.FormatInt(g.EnergyMJ, 10))
					}
				}
				if d := cmp.Diff(want, got); d != "" {
					t.Errorf("export %s energy_mj (-gpuacct job +export):\n%s", kind, d)
				}
			}
			if j.PowerMeanW == nil || math.Abs(*j.PowerMeanW*drawnS-float64(j.EnergyMJ)/1000) > 0.05*drawnS+1e-6 {
				t.Errorf("JSON: the job's mean power %s W × %v GPU-s is not its %d mJ", optF(j.PowerMeanW, "%.1f"), drawnS, j.EnergyMJ)
			}
		})
	}
}
