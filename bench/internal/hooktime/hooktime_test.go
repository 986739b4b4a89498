package hooktime

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestRow(t *testing.T) {
	ms := time.Millisecond
	for _, tc := range []struct {
		name    string
		ds      []time.Duration
		floor   time.Duration
		want    string
		wantMed time.Duration
	}{
		{"no floor", []time.Duration{3 * ms, 1 * ms, 2 * ms}, 0, "prolog       2.00ms   3.00ms   3.00ms\n", 2 * ms},
		{"floor", []time.Duration{4 * ms, 2 * ms, 8 * ms}, 2 * ms, "prolog       4.00ms   8.00ms   8.00ms      2.00x      4.00x\n", 4 * ms},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b strings.Builder
			med := Row(&b, 10, "prolog", tc.ds, tc.floor)
			if diff := cmp.Diff(tc.want, b.String()); diff != "" {
				t.Errorf("row (-want +got):\n%s", diff)
			}
			if med != tc.wantMed {
				t.Errorf("median %v, want %v", med, tc.wantMed)
			}
		})
	}
	if diff := cmp.Diff("case         median      p99      max  med/floor  p99/floor", Header(10)); diff != "" {
		t.Errorf("header (-want +got):\n%s", diff)
	}
}

func TestJobEnv(t *testing.T) {
	for _, tc := range []struct {
		name, prog, gpus string
		want             []string // beyond the variables every run has
	}{
		{"prolog", "bin/prolog", "0,1", []string{"SLURM_SCRIPT_CONTEXT=prolog_slurmd", "SLURM_JOB_GPUS=0,1", "CUDA_VISIBLE_DEVICES=0,1"}},
		{"prolog without GPUs", "prolog", "", []string{"SLURM_SCRIPT_CONTEXT=prolog_slurmd"}},
		{"epilog", "/x/epilog", "2", []string{"SLURM_SCRIPT_CONTEXT=epilog_slurmd", "SLURM_JOB_GPUS=2", "CUDA_VISIBLE_DEVICES=2",
			"SLURM_JOB_EXIT_CODE=0", "SLURM_JOB_EXIT_CODE2=0:0", "SLURM_JOB_DERIVED_EC=0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, kv := range JobEnv(7, tc.gpus, tc.prog) {
				switch {
				case kv == "SLURM_JOB_ID=7" || kv == "SLURM_JOB_RESTART_COUNT=0":
				case strings.HasPrefix(kv, "SLURM_SCRIPT_CONTEXT=") || strings.Contains(kv, "GPUS=") || strings.Contains(kv, "DEVICES=") ||
					strings.Contains(kv, "EXIT_CODE") || strings.Contains(kv, "DERIVED_EC"):
					got = append(got, kv)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("env (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRun(t *testing.T) {
	var ids []int
	ds, err := Run(3, "/bin/true", "unused.toml", func(i int) []string { ids = append(ids, i); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]int{0, 1, 2}, ids); diff != "" || len(ds) != 3 {
		t.Errorf("runs %d, env asked for (-want +got):\n%s", len(ds), diff)
	}
	if _, err := Run(2, "/bin/false", "unused.toml", func(int) []string { return nil }); err == nil {
		t.Error("a failing run: no error")
	}
}
