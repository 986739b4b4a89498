package report

import (
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

// TestOneJobRow: a job run is one type from the ledger to the pages, the
// store's row, not a copy of it field by field that the next column must
// be added to twice.
func TestOneJobRow(t *testing.T) {
	for _, tc := range []struct {
		name        string
		have, store reflect.Type
	}{
		{"JobRow", reflect.TypeOf(JobRow{}), reflect.TypeOf(store.JobRow{})},
		{"Detail.Job", reflect.TypeOf(Detail{}.Job), reflect.TypeOf(store.JobRow{})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.have != tc.store {
				t.Errorf("report's %s is %v, not the store's %v", tc.name, tc.have, tc.store)
			}
		})
	}
}

func TestJobRowFields(t *testing.T) {
	p := func(v int64) *int64 { return &v }
	reason := "test run"
	now := time.Unix(10000, 0)
	type got struct {
		ID      string
		Elapsed int64
		Reason  string
	}
	for _, tc := range []struct {
		name string
		j    JobRow
		want got
	}{
		{"plain, running", JobRow{JobID: 100, Start: 4000}, got{"100", 6000, ""}},
		{"ended", JobRow{JobID: 100, Start: 4000, End: p(5000)}, got{"100", 1000, ""}},
		{"started after now", JobRow{JobID: 100, Start: 20000}, got{"100", 0, ""}},
		{"array task", JobRow{JobID: 105, ArrayJobID: p(101), ArrayTaskID: p(3), Start: 4000, End: p(4000)}, got{"101_3", 0, ""}},
		{"array's first task is the job itself", JobRow{JobID: 101, ArrayJobID: p(101), ArrayTaskID: p(0), Start: 4000}, got{"101", 6000, ""}},
		{"task without its array", JobRow{JobID: 105, ArrayTaskID: p(3), Start: 4000}, got{"105", 6000, ""}},
		{"requeued, ignored", JobRow{JobID: 100, Restart: 2, Start: 4000, End: p(4500), Ignored: true, IgnoreReason: &reason}, got{"100+2", 500, "test run"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			have := got{tc.j.ID(), tc.j.Elapsed(now), tc.j.Reason()}
			if diff := cmp.Diff(tc.want, have); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
