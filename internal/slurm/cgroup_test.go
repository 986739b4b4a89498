package slurm

import "testing"

func TestParseCgroupJob(t *testing.T) {
	tests := map[string]uint64{
		"0::/system.slice/slurmstepd.scope/job_42/step_0/user/task_0\n": 42,
		"12:memory:/slurm/uid_1000/job_9/step_batch\n":                  9,
		"0::/user.slice/user-1000.slice/session-3.scope\n":              0,
		"":                                 0,
		"0::/job_x/\n":                     0,
		"0::/system.slice/job_77\n":        77,
		"0::/notjob_5/\n5:cpu:/job_6/step": 6,
		"0::/job_12x/job_13/step_0\n":      13,
		"0::/job_/job_5/\n":                5,
		"0::/job_7":                        7,
		"0::/job_8\r\n":                    0,
		"0::/job_99999999999999999999999/\n1::/job_3/": 3,
	}
	for in, want := range tests {
		t.Run(in, func(t *testing.T) {
			if got := ParseCgroupJob(in); got != want {
				t.Errorf("ParseCgroupJob(%q) = %d, want %d", in, got, want)
			}
		})
	}
}
