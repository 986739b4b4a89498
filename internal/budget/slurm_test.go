package budget

import (
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParseAssocMgr: a real slurmctld's (22.05) associations with
// GrpTRESMins on an account and on a user of it; TRES without a limit
// (N) are left out.
func TestParseAssocMgr(t *testing.T) {
	out, err := os.ReadFile("testdata/assoc_mgr-22.05.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []SlurmLimit{
		{Account: "vision", Limit: map[string]int64{"billing": 6000, "gres/gpu": 600}, Used: map[string]int64{"billing": 0, "gres/gpu": 0}},
		{Account: "vision", User: "root", Limit: map[string]int64{"gres/gpu": 120}, Used: map[string]int64{"gres/gpu": 0}},
	}
	got := ParseAssocMgr(out)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("limits (-want +got):\n%s", diff)
	}
	got[0].Used["billing"] = 90
	for _, tc := range []struct {
		name        string
		b           Budget
		limit, used float64
		ok          bool
	}{
		{"account billing", Budget{Account: "vision", Unit: Billing}, 100, 1.5, true},
		{"account gpu-hours", Budget{Account: "vision", Unit: GPUHours}, 10, 0, true},
		{"user gpu-hours", Budget{Account: "vision", User: "root", Unit: GPUHours}, 2, 0, true},
		{"user billing: no limit", Budget{Account: "vision", User: "root", Unit: Billing}, 0, 0, false},
		{"other account", Budget{Account: "nlp", Unit: GPUHours}, 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit, used, ok := SlurmFor(got, tc.b)
			if diff := cmp.Diff([]any{tc.limit, tc.used, tc.ok}, []any{limit, used, ok}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
