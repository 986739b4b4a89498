package report

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
)

// MaxClusterHours bounds the hours report cluster computes one by one
// (per cluster): five years.
const MaxClusterHours = 5 * 366 * 24

// maxResvNodes bounds the nodes of one reservation's hostlist.
const maxResvNodes = 100000

// ClusterRequest is a cluster utilization report.
type ClusterRequest struct {
	Window timespec.Window // whole hours (HourWindow)
	Period timespec.Period
	Scope  Scope
	// Now ends the hours computed: the hour it falls in is the last (in
	// full, as slurmdbd rolls up an hour asked for early); the zero Now
	// computes the whole window.
	Now time.Time
}

// ClusterRow is one cluster's utilization in one period.
type ClusterRow struct {
	Bucket  timespec.Bucket
	Cluster string
	Utilization
}

// ClusterUtilization computes sreport's cluster utilization for gres/gpu
// per cluster and period from Slurm's events and reservations (stored by
// ingest from sacctmgr) and the ledger's allocations (docs/utilization.md).
// Periods without any capacity recorded are left out, and so are hours
// after r.Now.
func (d *Ledger) ClusterUtilization(ctx context.Context, r ClusterRequest) ([]ClusterRow, error) {
	from, to := r.Window.Start.Unix(), r.Window.End.Unix()
	if hours := (to - from) / 3600; hours > MaxClusterHours {
		return nil, badInput("the window is %d hours long; report cluster computes at most %d (about five years): shorten it", hours, MaxClusterHours)
	}
	if len(r.Scope.Clusters) == 0 {
		return nil, nil
	}
	facts, err := d.st.ClusterFactsIn(ctx, r.Scope.Filter(), from, to)
	if err != nil {
		return nil, d.wrap(err)
	}
	by := map[string]*clusterFacts{}
	get := func(c string) *clusterFacts {
		f := by[c]
		if f == nil {
			f = &clusterFacts{alloc: map[int64]int64{}}
			by[c] = f
		}
		return f
	}
	for _, e := range facts.Events {
		get(e.Cluster).events = append(get(e.Cluster).events, e)
	}
	for _, sr := range facts.Reservations {
		nodes, err := slurmstate.ExpandHostlist(sr.Nodes, maxResvNodes)
		if err != nil {
			return nil, fmt.Errorf("reservation %s (%d) of %s: %w", sr.Name, sr.ID, sr.Cluster, err)
		}
		f := get(sr.Cluster)
		f.resvs = append(f.resvs, newResv(sr, nodes))
	}
	if err := d.st.HourAllocs(ctx, r.Scope.Filter(), from, to, d.hourSums, func(h store.HourAlloc) {
		get(h.Cluster).alloc[h.Hour] += h.AllocS
	}); err != nil {
		return nil, d.wrap(err)
	}
	sweeps := map[string]*factSweep{}
	for c, f := range by {
		if err := d.reservedSpans(ctx, c, f, from, to); err != nil {
			return nil, err
		}
		sweeps[c] = newFactSweep(f)
	}
	buckets := timespec.Buckets(r.Window, r.Period)
	var out []ClusterRow
	for _, b := range buckets {
		for _, c := range r.Scope.Clusters {
			sw := sweeps[c]
			if sw == nil {
				continue
			}
			row := ClusterRow{Bucket: b, Cluster: c}
			for h := b.Start.Unix() / 3600 * 3600; h < b.End.Unix(); h += 3600 {
				if h < b.Start.Unix() && b.Start.Unix() != from {
					continue // counted in the bucket its start falls in
				}
				if !r.Now.IsZero() && h > r.Now.Unix() {
					break // not yet
				}
				if err := ctx.Err(); err != nil {
					return nil, err
				}
				row.add(hourUtil(sw.at(h, h+3600), h, h+3600))
			}
			if row.Reported > 0 {
				out = append(out, row)
			}
		}
	}
	return out, nil
}

// reservedSpans reads the job parts on each reservation's nodes during
// it (within [from, to)): a short reservation reads only its own hours.
func (d *Ledger) reservedSpans(ctx context.Context, cluster string, f *clusterFacts, from, to int64) error {
	for i := range f.resvs {
		r := &f.resvs[i]
		s0, e0 := max(r.Start, from), min(r.End, to)
		if r.ignoreJobs || e0 <= s0 {
			continue
		}
		for chunk := range slices.Chunk(r.nodeList, 500) {
			spans, err := d.st.JobPartsIn(ctx, cluster, chunk, s0, e0)
			if err != nil {
				return d.wrap(err)
			}
			r.spans = append(r.spans, spans...)
		}
	}
	return nil
}

// ClusterTable is report cluster's table: sreport's columns in its order
// (Allocated, Down, PLND Down, Idle, Planned, Reported), then Reserved
// and, unless u is percent (where every GPU-time column is already a
// share of the capacity), ALLOC% and IDLE%: one name per figure.
func ClusterTable(r ClusterRequest, rows []ClusterRow, u table.Units) *table.Table {
	shares := u != table.Pct
	t := &table.Table{}
	if r.Period != timespec.None {
		t.Columns = append(t.Columns, table.Column{Key: "period", Title: "PERIOD", Kind: table.Text})
	}
	t.Columns = append(t.Columns,
		table.Column{Key: "cluster", Title: "CLUSTER", Kind: table.Text},
		table.Column{Key: "allocated_gpu", Title: "ALLOCATED", Kind: table.GPUSeconds},
		table.Column{Key: "down_gpu", Title: "DOWN", Kind: table.GPUSeconds},
		table.Column{Key: "planned_down_gpu", Title: "PLND DOWN", Kind: table.GPUSeconds, Drop: 3},
		table.Column{Key: "idle_gpu", Title: "IDLE", Kind: table.GPUSeconds},
		table.Column{Key: "planned_gpu", Title: "PLANNED", Kind: table.GPUSeconds, Drop: 5},
		table.Column{Key: "reported_gpu", Title: "REPORTED", Kind: table.GPUSeconds},
		table.Column{Key: "reserved_gpu", Title: "RESERVED", Kind: table.GPUSeconds, Drop: 4},
	)
	if shares {
		t.Columns = append(t.Columns,
			table.Column{Key: "allocated_pct", Title: "ALLOC%", Kind: table.Percent, Drop: 2},
			table.Column{Key: "idle_pct", Title: "IDLE%", Kind: table.Percent, Drop: 1})
	}
	pct := func(v, of int64) any {
		if of <= 0 {
			return nil
		}
		return 100 * float64(v) / float64(of)
	}
	for _, x := range rows {
		var cells []any
		if r.Period != timespec.None {
			cells = append(cells, x.Bucket.Label)
		}
		cells = append(cells, x.Cluster, x.Allocated, x.Down, x.PlannedDown, x.Idle, x.Planned, x.Reported, x.Reserved)
		if shares {
			cells = append(cells, pct(x.Allocated, x.Reported), pct(x.Idle, x.Reported))
		}
		t.Rows = append(t.Rows, table.Row{Cells: cells, Ref: float64(x.Reported)})
	}
	loc := r.Window.Start.Location()
	per := ""
	if r.Period != timespec.None {
		per = ", per " + string(r.Period)
	}
	of := " of " + r.Scope.Label()
	if len(r.Scope.Clusters) == 0 {
		of = " (no cluster in the ledger yet)"
	}
	t.Title = fmt.Sprintf("GPU utilization%s%s, %s – %s (%s)", of, per,
		r.Window.Start.Format("2006-01-02 15:04"), r.Window.End.Format("2006-01-02 15:04"), zoneName(loc, r.Window.Start))
	t.Meta = windowMeta("cluster", r.Window, r.Scope, table.KV{Key: "period", Value: periodName(r.Period)})
	if len(t.Rows) == 0 {
		t.Notes = append(t.Notes, "(no capacity recorded in this window: ingest reads it from sacctmgr, ingest.sacctmgr)")
	}
	t.Notes = append(t.Notes, "as sreport cluster utilization -T gres/gpu: allocated includes reservations in full; reserved = the part of it no job used; planned is pending jobs' time, which Slurm counts for CPUs only (docs/utilization.md)")
	return t
}
