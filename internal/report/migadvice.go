package report

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/aicloud/gpusuite/internal/notify"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/store"
)

// The MIG advice of `gpuacct job` and `gpuacct jobs`: a GPU or MIG slice
// whose memory peak and utilization fit a smaller slice, by the digests'
// rule (notify.SliceFit). Shown only where the ledger holds MIG
// instances, so that a site without MIG sees what it saw before.

// migSite says whether the ledger holds a MIG instance: only then is
// MIG advice shown.
func (d *Ledger) migSite(ctx context.Context) (bool, error) {
	mig, err := d.st.HasMIG(ctx)
	if err != nil {
		return false, d.wrap(err)
	}
	return mig, nil
}

// sliceFit is the smaller MIG slice g's run would fit, "" if none or if
// its utilization is not known (a slice's is known only from GPM).
func sliceFit(g GPUStat) string {
	if g.SampleS <= 0 || g.MemMaxMiB == nil || g.UtilMean == nil || g.UtilMax == nil || *g.UtilMax <= 0 {
		return ""
	}
	total := 0.0
	if g.MemTotalMiB != nil {
		total = *g.MemTotalMiB
	}
	s, _ := notify.SliceFit(g.Model, total, *g.MemMaxMiB, *g.UtilMean)
	return s
}

// sliceNotes is the note naming the smaller MIG slice a run of one GPU
// or slice would fit, as the digest names it.
func sliceNotes(det *Detail) []string {
	if len(det.GPUs) != 1 || det.Job.GPUs != 1 {
		return nil
	}
	var out []string
	for _, g := range det.GPUs {
		s := sliceFit(g)
		if s == "" {
			continue
		}
		what := "GPU " + gpuName(g)
		if prof, ok := record.MIGProfileName(g.Model); ok {
			what = "MIG slice " + prof
		}
		out = append(out, fmt.Sprintf("%s on %s peaked at %.1f GiB of memory and %s utilization: a MIG slice %s would do (--gres=gpu:%s:1).",
			what, g.Node, *g.MemMaxMiB/1024, pct(*g.UtilMean), s, s))
	}
	return out
}

// addSliceNotes puts the run's MIG advice first among its notes, on a
// site with MIG; the note that found nothing to improve then goes.
func (d *Ledger) addSliceNotes(ctx context.Context, det *Detail) error {
	notes := sliceNotes(det)
	if len(notes) == 0 {
		return nil
	}
	if mig, err := d.migSite(ctx); !mig || err != nil {
		return err
	}
	rest := det.Notes
	if len(rest) == 1 && strings.HasPrefix(rest[0], "Nothing to improve found") {
		rest = nil
	}
	det.Notes = append(notes, rest...)
	return nil
}

// addSliceColumn adds to a job list the MIG slice each one-GPU run
// would fit ("-" for none), on a site with MIG. rows are the list's runs
// (jobs.id), in its order, read MaxResourceRows at a time.
func (d *Ledger) addSliceColumn(ctx context.Context, t *table.Table, rows []int64) error {
	if len(rows) == 0 {
		return nil
	}
	if mig, err := d.migSite(ctx); !mig || err != nil {
		return err
	}
	t.Columns = append(t.Columns, table.Column{Key: "mig_fit", Title: "FITS", Kind: table.Text, Drop: 10})
	i := 0
	for part := range slices.Chunk(rows, store.MaxResourceRows) {
		one, err := d.st.OneGPURuns(ctx, part)
		if err != nil {
			return d.wrap(err)
		}
		for _, row := range part {
			fit := ""
			if r, ok := one[row]; ok && r.AggSeq != nil && r.SampleS > 0 {
				m := 100 * r.UtilS / r.SampleS
				fit = sliceFit(GPUStat{Model: r.Model, SampleS: r.SampleS, UtilMean: &m, UtilMax: r.UtilMax, MemMaxMiB: r.MemMaxMiB, MemTotalMiB: r.MemTotalMiB})
			}
			if fit == "" {
				fit = "-"
			}
			t.Rows[i].Cells = append(t.Rows[i].Cells, fit)
			i++
		}
	}
	return nil
}
