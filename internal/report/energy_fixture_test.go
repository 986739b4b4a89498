package report

import (
	"context"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/store"
)

// ingestInto writes the agent's records to the ledger at loc as ingest
// does (store.Batch): a segment of samples, then aggregates.
func ingestInto(t *testing.T, loc string, now time.Time, h *record.SegmentHeader, samples []record.Sample, aggs ...record.JobGPU) {
	t.Helper()
	st, err := store.Open(context.Background(), store.At(loc))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	b, err := st.Begin(context.Background(), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(samples) > 0 {
		if _, err := b.Segment(h, samples); err != nil {
			t.Fatal(err)
		}
	}
	for i := range aggs {
		if err := b.JobGPU(&aggs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.Commit(); err != nil {
		t.Fatal(err)
	}
}

// at is the fixtures' time T0 + s seconds.
func at(s float64) time.Time {
	return time.Unix(reportfixture.T0, 0).UTC().Add(time.Duration(s * float64(time.Second)))
}

// fixtureSample is a sample of GPU idx of gpu01 at T0+s, the job's when
// job is not 0; power in mW and the energy counter (nil: none) as given.
func fixtureSample(idx int, s float64, job uint64, util, powerMW uint32, counterMJ *uint64) record.Sample {
	x := record.Sample{Time: at(s), UUID: "GPU-gpu01-" + string(rune('0'+idx)), Index: idx, GPUUtil: &util, PowerMW: &powerMW, EnergyMJ: counterMJ}
	if job != 0 {
		x.Jobs = []record.JobShare{{Job: job, Share: 1}}
	}
	return x
}
