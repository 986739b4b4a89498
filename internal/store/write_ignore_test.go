package store

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestJobRowsAndTaggedJobs(t *testing.T) {
	ctx := context.Background()
	s := openTemp(t)
	b, err := s.Begin(ctx, time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Rollback()
	// job 100 (array 100, tasks 0 and 1 as jobs 101, 102), 100 restarted,
	// and job 100 of cluster d.
	row := func(cluster string, job uint64, restart int, array, task any, comment any) int64 {
		id, err := b.Job(cluster, job, restart)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.tx.ExecContext(ctx, `UPDATE jobs SET array_job_id = ?, array_task_id = ?, comment = ? WHERE id = ?`, array, task, comment, id); err != nil {
			t.Fatal(err)
		}
		return id
	}
	a0 := row("c", 101, 0, 100, 0, "run #bench")
	a1 := row("c", 102, 0, 100, 1, nil)
	plain := row("c", 200, 0, nil, nil, "no tag")
	again := row("c", 200, 1, nil, nil, "#bench again")
	other := row("d", 200, 0, nil, nil, "#bench")
	for _, tc := range []struct {
		cluster, spec string
		want          []int64
	}{
		{"c", "100", []int64{a0, a1}},
		{"c", "100_1", []int64{a1}},
		{"c", "200", []int64{plain, again}},
		{"c", "200+1", []int64{again}},
		{"", "200", []int64{plain, again, other}},
		{"d", "200", []int64{other}},
		{"c", "999", nil},
	} {
		t.Run(tc.cluster+"/"+tc.spec, func(t *testing.T) {
			got, err := b.JobRows(tc.cluster, tc.spec)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("JobRows (-want +got):\n%s", diff)
			}
		})
	}
	if err := b.SetIgnored(other, true, "x"); err != nil {
		t.Fatal(err)
	}
	got, err := b.TaggedJobs("#bench")
	if err != nil {
		t.Fatal(err)
	}
	want := []TaggedJob{{Row: a0, JobID: 101}, {Row: again, JobID: 200}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("TaggedJobs (-want +got):\n%s", diff)
	}
}
