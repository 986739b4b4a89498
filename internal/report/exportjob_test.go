package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// TestExportJobSamples: `export samples --job` writes exactly the job
// run's samples: not the sample at its start that the agent took before
// it knew the job (no job), nor one before or after it, nor another
// run's; and the one taken at its end, which still names it.
func TestExportJobSamples(t *testing.T) {
	now := at(3600)
	loc := reportfixture.BuildLedger(t, []reportfixture.Job{
		{ID: 7, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 1, Start: reportfixture.T0 + 100, End: reportfixture.T0 + 200},
		{ID: 8, User: "bob", Acct: "nlp", Part: "gpu", Node: "gpu01", GPUs: 1, Start: reportfixture.T0 + 210, End: reportfixture.T0 + 300},
	}, now)
	var samples []record.Sample
	for s := 90; s <= 230; s += 10 {
		job := uint64(0)
		switch {
		case s > 100 && s <= 200: // 100: the agent did not know the job yet
			job = 7
		case s >= 210:
			job = 8
		}
		samples = append(samples, fixtureSample(0, float64(s), job, 50, 200_000, nil))
	}
	ingestInto(t, loc, now, &record.SegmentHeader{Cluster: "c1", Node: "gpu01", Seq: 1, Interval: 10, Start: at(90)}, samples)
	db, err := OpenDB(context.Background(), loc, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		name string
		spec JobSpec
		want []string
	}{
		{"job 7", JobSpec{ID: 7, Restart: -1}, []string{"110", "120", "130", "140", "150", "160", "170", "180", "190", "200"}},
		{"job 8", JobSpec{ID: 8, Restart: -1}, []string{"210", "220", "230"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			spec := tc.spec
			if _, err := db.Export(context.Background(), ExportOptions{Kind: "samples", Out: &out, Job: &spec, Now: now,
				Window: timespec.Window{Start: at(0), End: now}}); err != nil {
				t.Fatal(err)
			}
			rows, err := csv.NewReader(&out).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range rows[1:] {
				ms, err := strconv.ParseInt(r[sampleT], 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, strconv.FormatInt(ms/1000-reportfixture.T0, 10))
				if r[5] != strconv.FormatInt(tc.spec.ID, 10) {
					t.Errorf("sample at %s names job %q", r[sampleT], r[5])
				}
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("samples exported, seconds after T0 (-want +got):\n%s", d)
			}
		})
	}
}
