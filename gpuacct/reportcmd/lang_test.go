package reportcmd

import (
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// gpuacct jobs in the terminal's language: Japanese headings, title,
// notes and total under LANG=ja_JP.UTF-8 (golden, testdata/jobs,
// -update); CSV keeps its keys whatever the language.
func TestJobsJapanese(t *testing.T) {
	now := time.Unix(t0+86400, 0)
	path := jobsLedger(t, now)
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		has     []string
		hasNot  []string
		checkGo bool
	}{
		{"ja.txt", map[string]string{"LANG": "ja_JP.UTF-8"}, nil, []string{"ジョブID", "ユーザー", "合計"}, []string{"JOBID  USER", "TOTAL", "details and suggestions"}, true},
		{"", map[string]string{"LANG": "ja_JP.UTF-8"}, []string{"--format", "csv"}, []string{"job,user,state"}, []string{"ジョブ"}, false},
		{"", map[string]string{"LC_ALL": "C", "LANG": "ja_JP.UTF-8"}, nil, []string{"JOBID", "TOTAL"}, []string{"ジョブ"}, false},
	} {
		t.Run(strings.Join(append([]string{tc.name}, tc.args...), " "), func(t *testing.T) {
			d, out, _ := testDeps(now, tc.env)
			d.Caller = func() (string, error) { return "alice", nil }
			if err := run(t, d, append([]string{"jobs", dbOpt(path), "--tz", "UTC", "--since", "7d"}, tc.args...)...); err != nil {
				t.Fatal(err)
			}
			for _, s := range tc.has {
				if !strings.Contains(out.String(), s) {
					t.Errorf("no %q in\n%s", s, out)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(out.String(), s) {
					t.Errorf("still %q in\n%s", s, out)
				}
			}
			if tc.checkGo {
				golden(t, filepath.Join("testdata", "jobs", tc.name), out.String())
			}
		})
	}
}
