package report

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestResolveScope: the clusters a read covers, and the one line that
// refuses an unknown name or an unmade choice.
func TestResolveScope(t *testing.T) {
	two := []string{"gpu1", "gpu2"}
	tests := []struct {
		name    string
		known   []string
		req     ScopeRequest
		want    []string
		filter  []string
		several bool
		title   string
		wantErr string
	}{
		{name: "one cluster, nothing asked", known: []string{"c1"}, want: []string{"c1"}},
		{name: "one cluster, local elsewhere", known: []string{"c1"}, req: ScopeRequest{Local: "other"}, want: []string{"c1"}},
		{name: "empty ledger", want: nil},
		{name: "local", known: two, req: ScopeRequest{Local: "gpu2"}, want: []string{"gpu2"}, filter: []string{"gpu2"}, title: "gpu2"},
		{name: "asked over local", known: two, req: ScopeRequest{Local: "gpu2", Ask: []string{"gpu1"}}, want: []string{"gpu1"}, filter: []string{"gpu1"}, title: "gpu1"},
		{name: "all flag over local", known: two, req: ScopeRequest{Local: "gpu2", All: true}, want: two, several: true, title: "all clusters (gpu1, gpu2)"},
		{name: "-M all", known: two, req: ScopeRequest{Ask: []string{"all"}}, want: two, several: true, title: "all clusters (gpu1, gpu2)"},
		{name: "both named, sorted, once", known: two, req: ScopeRequest{Ask: []string{"gpu2", "gpu1", "gpu2"}}, want: two, several: true, title: "all clusters (gpu1, gpu2)"},
		{name: "two of three", known: []string{"a", "b", "c"}, req: ScopeRequest{Ask: []string{"c", "a"}}, want: []string{"a", "c"}, filter: []string{"a", "c"}, several: true, title: "a, c"},
		{name: "no choice", known: two, wantErr: "the ledger holds clusters gpu1, gpu2: choose with -M NAME or --all-clusters"},
		{name: "local not in ledger", known: two, req: ScopeRequest{Local: "cluster"}, wantErr: "the ledger holds clusters gpu1, gpu2: choose with -M NAME or --all-clusters"},
		{name: "no choice, default all", known: two, req: ScopeRequest{DefaultAll: true}, want: two, several: true, title: "all clusters (gpu1, gpu2)"},
		{name: "unknown, near one", known: two, req: ScopeRequest{Ask: []string{"gpu3"}}, wantErr: `--clusters: no cluster "gpu3" in L: did you mean gpu1, gpu2?`},
		{name: "unknown, near none", known: two, req: ScopeRequest{Ask: []string{"zz"}}, wantErr: `--clusters: no cluster "zz" in L (its clusters: gpu1, gpu2)`},
		{name: "unknown on the web", known: two, req: ScopeRequest{Ask: []string{"gpu1", "gpu2x"}, Param: "?clusters"}, wantErr: `?clusters: no cluster "gpu2x" in L: did you mean gpu2, gpu1?`},
		{name: "unknown in an empty ledger", req: ScopeRequest{Ask: []string{"gpu3"}}, wantErr: `--clusters: no cluster "gpu3" in L yet (nothing ingested)`},
		{name: "names and all", known: two, req: ScopeRequest{Ask: []string{"gpu1", "all"}}, wantErr: "--clusters gpu1,all: name clusters or all, not both"},
		{name: "given, naming nothing", known: two, req: ScopeRequest{Given: true, Local: "gpu1"}, wantErr: "--clusters '': name a cluster (its clusters: gpu1, gpu2) or all"},
		{name: "given, naming nothing, web", known: two, req: ScopeRequest{Given: true, DefaultAll: true, Param: "?clusters"}, wantErr: "?clusters '': name a cluster (its clusters: gpu1, gpu2) or all"},
		{name: "given with --all-clusters", known: two, req: ScopeRequest{Given: true, All: true}, want: two, several: true, title: "all clusters (gpu1, gpu2)"},
		{name: "as many names as allowed", known: two, req: ScopeRequest{Ask: repeat("gpu1", MaxClusterNames)}, want: []string{"gpu1"}, filter: []string{"gpu1"}, title: "gpu1"},
		{name: "too many names", known: two, req: ScopeRequest{Ask: repeat("gpu1", MaxClusterNames+1)}, wantErr: "--clusters: 65 names, at most 64: name fewer, or all"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := ResolveScope("L", tt.known, tt.req)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr || !IsBadInput(err) {
					t.Fatalf("error %v, want bad input %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, s.Clusters); d != "" {
				t.Errorf("clusters (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.filter, s.Filter()); d != "" {
				t.Errorf("filter (-want +got):\n%s", d)
			}
			if s.Several() != tt.several || s.Title() != tt.title {
				t.Errorf("several %v title %q, want %v %q", s.Several(), s.Title(), tt.several, tt.title)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

// TestResolveScopeManyNames: a check of many distinct names is linear:
// 10,000 of them (over the bound) and 64 unknown ones answer at once with
// one line. The bound is what is asserted, not a duration.
func TestResolveScopeManyNames(t *testing.T) {
	many := make([]string, 10000)
	for i := range many {
		many[i] = fmt.Sprintf("c%d", i)
	}
	if _, err := ResolveScope("L", []string{"gpu1"}, ScopeRequest{Ask: many}); err == nil || !strings.Contains(err.Error(), "10000 names, at most 64") {
		t.Errorf("10,000 names: %v", err)
	}
	if _, err := ResolveScope("L", []string{"gpu1"}, ScopeRequest{Ask: many[:64]}); err == nil || !strings.Contains(err.Error(), `no cluster "c0"`) {
		t.Errorf("64 unknown names: %v, want the first refused", err)
	}
}
