package slurm

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/record"
)

func envFrom(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// loadEnv reads an `env | sort` capture from a real slurmd.
func loadEnv(t *testing.T, name string) map[string]string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	m := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), "=")
		if ok {
			m[k] = v
		}
	}
	return m
}

func i64(v int64) *int64 { return &v }

func TestParseEnvFixtures(t *testing.T) {
	tests := []struct {
		file string
		want Job
	}{
		{"prolog.2.env", Job{Job: record.Job{ID: 2, User: "root", UID: i64(0), GID: i64(0), Partition: "gpu", Node: "vm", Cluster: "testcl",
			GPUs: []int{0, 1}, CUDAVisibleDevices: "0,1", Context: string(PrologSlurmd)}}},
		{"epilog.2.env", Job{Job: record.Job{ID: 2, User: "root", UID: i64(0), GID: i64(0), Partition: "gpu", Node: "vm", Cluster: "testcl",
			GPUs: []int{0, 1}, CUDAVisibleDevices: "0,1", Context: string(EpilogSlurmd),
			Exit: &Exit{Code: 0, Signal: 0, Raw: i64(0), Derived: i64(0)}}}},
		{"prolog.3.env", Job{}},
		{"epilog.1014.env", Job{}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			env := loadEnv(t, tt.file)
			got, err := ParseEnv(envFrom(env))
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Missing) != 0 || len(got.Problems) != 0 {
				t.Errorf("real slurmd env reported defects: missing %v problems %v", got.Missing, got.Problems)
			}
			if got.ID == 0 || got.User == "" || got.Node == "" {
				t.Errorf("incomplete job: %+v", got)
			}
			if tt.want.ID != 0 {
				if d := cmp.Diff(tt.want, got); d != "" {
					t.Errorf("job (-want +got):\n%s", d)
				}
			}
		})
	}
	// The account arrives lower-cased from slurmd; keep it as given.
	got, _ := ParseEnv(envFrom(loadEnv(t, "prolog.3.env")))
	if got.Account != "teama" {
		t.Errorf("account = %q, want teama", got.Account)
	}
}

func TestParseEnvGarbage(t *testing.T) {
	base := map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_USER": "alice", "SLURM_JOB_UID": "1000", "SLURMD_NODENAME": "gpu01"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	tests := []struct {
		name         string
		env          map[string]string
		wantErr      bool
		wantProblems int
		wantMissing  []string
		check        func(Job) bool
	}{
		{name: "no job id", env: map[string]string{}, wantErr: true},
		{name: "job id garbage", env: with("SLURM_JOB_ID", "12abc"), wantErr: true},
		{name: "job id zero", env: with("SLURM_JOB_ID", "0"), wantErr: true},
		{name: "job id negative", env: with("SLURM_JOB_ID", "-4"), wantErr: true},
		{name: "job id too big", env: with("SLURM_JOB_ID", "99999999999"), wantErr: true},
		{name: "minimal", env: base, check: func(j Job) bool { return j.ID == 7 && j.GPUs == nil }},
		{name: "missing user uid node", env: map[string]string{"SLURM_JOB_ID": "7"}, wantMissing: []string{"SLURM_JOB_USER", "SLURM_JOB_UID", "SLURMD_NODENAME"}},
		{name: "gpus range", env: with("SLURM_JOB_GPUS", "0-3,6"), check: func(j Job) bool { return cmp.Equal(j.GPUs, []int{0, 1, 2, 3, 6}) }},
		{name: "gpus garbage", env: with("SLURM_JOB_GPUS", "0,x"), wantProblems: 1, check: func(j Job) bool { return j.GPUs == nil }},
		{name: "gpus huge range", env: with("SLURM_JOB_GPUS", "0-4000000000"), wantProblems: 1},
		{name: "user with shell chars", env: with("SLURM_JOB_USER", "bob;rm -rf /"), wantProblems: 1, check: func(j Job) bool { return j.User == "" }},
		{name: "uid garbage", env: with("SLURM_JOB_UID", "root"), wantProblems: 1, check: func(j Job) bool { return j.UID == nil }},
		{name: "account with slash", env: with("SLURM_JOB_ACCOUNT", "a/b"), wantProblems: 1},
		{name: "restart negative", env: with("SLURM_JOB_RESTART_COUNT", "-1"), wantProblems: 1},
		{name: "restart 2", env: with("SLURM_JOB_RESTART_COUNT", "2"), check: func(j Job) bool { return j.RestartCount == 2 }},
		{name: "array", env: with("SLURM_ARRAY_JOB_ID", "40", "SLURM_ARRAY_TASK_ID", "3"), check: func(j Job) bool { return j.ArrayJobID == 40 && *j.ArrayTaskID == 3 }},
		{name: "array garbage", env: with("SLURM_ARRAY_JOB_ID", "x"), wantProblems: 1},
		{name: "exit code2 failed", env: with("SLURM_JOB_EXIT_CODE2", "3:0", "SLURM_JOB_EXIT_CODE", "768"), check: func(j Job) bool { return j.Exit.Code == 3 && j.Exit.Signal == 0 }},
		{name: "exit code2 signal", env: with("SLURM_JOB_EXIT_CODE2", "0:15"), check: func(j Job) bool { return j.Exit.Signal == 15 }},
		{name: "exit raw only", env: with("SLURM_JOB_EXIT_CODE", "768"), check: func(j Job) bool { return j.Exit.Code == 3 }},
		{name: "exit code2 garbage", env: with("SLURM_JOB_EXIT_CODE2", "three"), wantProblems: 1},
		{name: "exit code2 out of range", env: with("SLURM_JOB_EXIT_CODE2", "300:0"), wantProblems: 1},
		{name: "context unknown", env: with("SLURM_SCRIPT_CONTEXT", "bogus"), wantProblems: 1},
		{name: "cuda with newline", env: with("CUDA_VISIBLE_DEVICES", "0\n1"), wantProblems: 1},
		{name: "cuda uuids kept", env: with("CUDA_VISIBLE_DEVICES", "GPU-abc,GPU-def"), check: func(j Job) bool { return j.CUDAVisibleDevices == "GPU-abc,GPU-def" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnv(envFrom(tt.env))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if len(got.Problems) != tt.wantProblems {
				t.Errorf("problems = %q, want %d", got.Problems, tt.wantProblems)
			}
			if tt.wantMissing != nil {
				if d := cmp.Diff(tt.wantMissing, got.Missing); d != "" {
					t.Errorf("missing (-want +got):\n%s", d)
				}
			}
			if tt.check != nil && !tt.check(got) {
				t.Errorf("unexpected job: %+v exit %+v", got, got.Exit)
			}
		})
	}
}

// An exit slurmd did not give, or gave garbage, is absent: never 0.
func TestParseEnvExit(t *testing.T) {
	tests := []struct {
		name         string
		env          []string
		want         *Exit
		wantProblems int
	}{
		{name: "prolog: none", want: nil},
		{name: "both", env: []string{"SLURM_JOB_EXIT_CODE2", "3:0", "SLURM_JOB_EXIT_CODE", "768", "SLURM_JOB_DERIVED_EC", "0"},
			want: &Exit{Code: 3, Raw: i64(768), Derived: i64(0)}},
		{name: "code2 only", env: []string{"SLURM_JOB_EXIT_CODE2", "0:15"}, want: &Exit{Signal: 15}},
		{name: "raw only", env: []string{"SLURM_JOB_EXIT_CODE", "768"}, want: &Exit{Code: 3, Raw: i64(768)}},
		{name: "raw signalled", env: []string{"SLURM_JOB_EXIT_CODE", "9"}, want: &Exit{Signal: 9, Raw: i64(9)}},
		{name: "code2 garbage, raw good", env: []string{"SLURM_JOB_EXIT_CODE2", "three", "SLURM_JOB_EXIT_CODE", "256"},
			want: &Exit{Code: 1, Raw: i64(256)}, wantProblems: 1},
		{name: "code2 garbage alone", env: []string{"SLURM_JOB_EXIT_CODE2", "three"}, want: nil, wantProblems: 1},
		{name: "code2 out of range", env: []string{"SLURM_JOB_EXIT_CODE2", "300:0"}, want: nil, wantProblems: 1},
		{name: "raw garbage alone", env: []string{"SLURM_JOB_EXIT_CODE", "x"}, want: nil, wantProblems: 1},
		{name: "raw not a wait status", env: []string{"SLURM_JOB_EXIT_CODE", "70000"}, want: nil, wantProblems: 1},
		{name: "raw negative", env: []string{"SLURM_JOB_EXIT_CODE", "-1"}, want: nil, wantProblems: 1},
		{name: "both garbage", env: []string{"SLURM_JOB_EXIT_CODE2", ":", "SLURM_JOB_EXIT_CODE", "zero"}, want: nil, wantProblems: 2},
		{name: "derived only", env: []string{"SLURM_JOB_DERIVED_EC", "2"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := map[string]string{"SLURM_JOB_ID": "7", "SLURM_JOB_USER": "alice", "SLURM_JOB_UID": "1000", "SLURMD_NODENAME": "gpu01"}
			for i := 0; i < len(tt.env); i += 2 {
				env[tt.env[i]] = tt.env[i+1]
			}
			got, err := ParseEnv(envFrom(env))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Exit); diff != "" {
				t.Errorf("exit (-want +got):\n%s", diff)
			}
			if len(got.Problems) != tt.wantProblems {
				t.Errorf("problems = %q, want %d", got.Problems, tt.wantProblems)
			}
		})
	}
}

// The hand-written name check accepts exactly what the patterns it replaced
// accepted.
func TestValidNameMatchesPatterns(t *testing.T) {
	patterns := map[string]*regexp.Regexp{
		nameExtra: regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,127}$`),
		nodeExtra: regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`),
	}
	inputs := []string{"", "a", "alice", "team-a", "Z9_", "_x", ".x", "-x", "@x", "a@b", "a+b", "a.b-c", "gpu01.cluster",
		"a b", "a/b", "a;b", "a\n", "\na", "a\x00", "ü", "aü", "a:b", "a,b", "a$", strings.Repeat("a", 128), strings.Repeat("a", 129),
		"a" + strings.Repeat(".", 127), "a" + strings.Repeat("@", 128)}
	for extra, re := range patterns {
		for _, in := range inputs {
			if got, want := validName(in, extra), re.MatchString(in); got != want {
				t.Errorf("validName(%q, %q) = %v, pattern %s says %v", in, extra, got, re, want)
			}
		}
	}
}

func TestParseIDList(t *testing.T) {
	tests := []struct {
		in      string
		want    []int
		wantErr bool
	}{
		{"", nil, false},
		{"0", []int{0}, false},
		{"0,1", []int{0, 1}, false},
		{"0-3,6", []int{0, 1, 2, 3, 6}, false},
		{"3,1,1,2", []int{1, 2, 3}, false},
		{" 2 ", []int{2}, false},
		{"3-1", nil, true},
		{"1,,2", nil, true},
		{"-1", nil, true},
		{"a", nil, true},
		{"1-", nil, true},
		{"1024", nil, true},
		{"0-1023", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseIDList(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if tt.want != nil || tt.in == "" {
				if d := cmp.Diff(tt.want, got); d != "" {
					t.Errorf("(-want +got):\n%s", d)
				}
			}
		})
	}
}

func FuzzParseIDList(f *testing.F) {
	for _, s := range []string{"0,1", "0-3,6", "", "x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids, err := ParseIDList(s)
		if err != nil {
			return
		}
		for i, v := range ids {
			if v < 0 || v > maxGPUID || (i > 0 && ids[i-1] >= v) {
				t.Fatalf("%q gave %v", s, ids)
			}
		}
	})
}
