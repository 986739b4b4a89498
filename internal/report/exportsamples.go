package report

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// samplesScope is what a samples export reads: the GPUs, the window
// (Unix ms) and the chosen metrics that get a column each; with job set,
// only that run's samples (jobID, restart) in [from, to], its end's too.
type samplesScope struct {
	gpus     []store.GPURow
	from, to int64
	metrics  []string
	job      bool
	jobID    int64
	restart  int
}

// samplesScope is every GPU in the window, or with o.Job the job's GPUs
// over its allocation (to now while it runs).
func (d *Ledger) samplesScope(ctx context.Context, o ExportOptions) (samplesScope, error) {
	sc := samplesScope{from: o.Window.Start.UnixMilli(), to: o.Window.End.UnixMilli()}
	var row int64
	if o.Job != nil {
		r, err := d.jobRunIn(ctx, Scope{Clusters: o.Clusters}, *o.Job)
		if err != nil {
			return sc, err
		}
		row = r.Row
		sc.job, sc.jobID, sc.restart = true, r.JobID, r.Restart
		sc.from, sc.to = r.Start*1000, o.Now.UnixMilli()
		if r.End != nil {
			sc.to = *r.End * 1000
		}
		gs, err := d.st.JobGPUs(ctx, r.Row)
		if err != nil {
			return sc, d.wrap(err)
		}
		for _, g := range gs {
			sc.gpus = append(sc.gpus, store.GPURow{ID: g.GPUID, NodeID: g.NodeID, UUID: g.UUID, Index: g.Index})
		}
	} else {
		gs, err := d.st.GPUs(ctx)
		if err != nil {
			return sc, d.wrap(err)
		}
		sc.gpus = gs
	}
	names, err := d.st.MetricNames(ctx, row)
	if err != nil {
		return sc, d.wrap(err)
	}
	sort.SliceStable(names, func(i, j int) bool { return catalogueRank(names[i]) < catalogueRank(names[j]) })
	sc.metrics = names
	return sc, nil
}

// Columns of the samples export's store rows (store.ExportSamples), and
// of what it writes before the metrics.
const (
	sampleT      = 3
	sampleIv     = 4
	samplePower  = 11
	sampleFixed  = 16 // node … missing
	sampleMetric = 16 // the store's metrics JSON
)

// sampleRow turns a store row of the samples export into the export's:
// power in watts, and each chosen metric in its column (Export rounds
// each to its unit, table.UnitOf), human on request.
type sampleRow struct {
	names []string // the columns
	human bool
	loc   *time.Location
	out   []any
	m     map[string]float64
}

func newSampleRow(cols []string, human bool, loc *time.Location) *sampleRow {
	if loc == nil {
		loc = time.UTC
	}
	return &sampleRow{names: cols, human: human, loc: loc, out: make([]any, len(cols)), m: map[string]float64{}}
}

func (r *sampleRow) convert(vals []any) ([]any, error) {
	copy(r.out, vals[:sampleFixed])
	if p, ok := vals[samplePower].(int64); ok {
		r.out[samplePower] = float64(p) / 1000
	}
	for i := sampleFixed; i < len(r.out); i++ {
		r.out[i] = nil
	}
	var raw string
	switch x := vals[sampleMetric].(type) {
	case string:
		raw = x
	case []byte:
		raw = string(x)
	}
	if raw != "" {
		clear(r.m)
		if err := json.Unmarshal([]byte(raw), &r.m); err != nil {
			return nil, fmt.Errorf("sample metrics %q: %w", raw, err)
		}
		for i, name := range r.names[sampleFixed:] {
			if v, ok := r.m[name]; ok {
				r.out[sampleFixed+i] = v
			}
		}
	}
	if r.human {
		r.humanize()
	}
	return r.out, nil
}

// humanize writes each value in its unit for people: the time in the
// report's zone, the interval in seconds, a figure with a unit in its
// column's name in that unit.
func (r *sampleRow) humanize() {
	for i, v := range r.out {
		if v == nil {
			continue
		}
		name := r.names[i]
		f, isNum := number(v)
		switch {
		case i == sampleT && isNum:
			r.out[i] = time.UnixMilli(int64(f)).In(r.loc).Format("2006-01-02 15:04:05.000")
		case i == sampleIv && isNum:
			r.out[i] = Decimal(f/1000, 3) + " s"
		case isNum:
			if s, ok := humanMetric(name, f); ok {
				r.out[i] = s
			}
		}
	}
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

// Columns of the jobs and gpus exports that one energy per job and GPU
// sets (splitEnergy).
const (
	jobsEnergy    = 18 // jobs: energy_mj
	gpusSampleS   = 7  // gpus: sample_s
	gpusEnergy    = 12 // gpus: energy_mj
	gpusJobEnergy = 15 // gpus: the run's energy, after the export's columns
	gpusPowerJ    = 16 // gpus: the GPU's power × seconds
)

// exportGPUs is the gpus export's rows (ncols columns), each GPU's
// energy_mj its part of its run's energy as gpuacct job shows it: a run's
// GPUs, which the store gives one after another, are held and split
// together (bounded by the run's GPUs).
func (d *Ledger) exportGPUs(ctx context.Context, clusters []string, from, to int64, ncols int, fn func([]any) error) error {
	var run [][]any
	flush := func() error {
		if len(run) == 0 {
			return nil
		}
		counter, power, sampled := make([]float64, len(run)), make([]float64, len(run)), make([]float64, len(run))
		for i, r := range run {
			counter[i], _ = number(r[gpusEnergy])
			power[i], _ = number(r[gpusPowerJ])
			sampled[i], _ = number(r[gpusSampleS])
		}
		jobMJ, _ := run[0][gpusJobEnergy].(int64)
		total, parts, _ := splitEnergy(jobMJ, counter, power, sampled)
		for i, r := range run {
			if total > 0 {
				r[gpusEnergy] = parts[i] // else unknown stays empty
			}
			if err := fn(r[:ncols]); err != nil {
				return err
			}
		}
		run = run[:0]
		return nil
	}
	err := d.st.ExportGPUsEnergyIn(ctx, clusters, from, to, func(vals []any) error {
		if len(run) > 0 && !sameRun(vals, run[0]) {
			if err := flush(); err != nil {
				return err
			}
		}
		run = append(run, append([]any(nil), vals...))
		return nil
	})
	if err != nil {
		return err
	}
	return flush()
}

// sameRun says whether two gpus export rows are of one job run: cluster,
// job_id and restart.
func sameRun(a, b []any) bool {
	for i := range 3 {
		if machineValue(a[i]) != machineValue(b[i]) {
			return false
		}
	}
	return true
}
