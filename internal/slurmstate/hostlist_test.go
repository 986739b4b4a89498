package slurmstate

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpandHostlist(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"", nil},
		{"(null)", nil},
		{"node1", []string{"node1"}},
		{"gpu[01-03,07],login1", []string{"gpu01", "gpu02", "gpu03", "gpu07", "login1"}},
		{"n[8-11]", []string{"n8", "n9", "n10", "n11"}},
		{"n[098-101]", []string{"n098", "n099", "n100", "n101"}},
		{"rack[1-2]-n[1-2]", []string{"rack1-n1", "rack1-n2", "rack2-n1", "rack2-n2"}},
		{"a[1],b", []string{"a1", "b"}},
		{"gpu[1-3]-ib", []string{"gpu1-ib", "gpu2-ib", "gpu3-ib"}},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := ExpandHostlist(c.in, 0)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
		})
	}
}

func TestExpandHostlistErrors(t *testing.T) {
	cases := []struct {
		in   string
		max  int
		want string
	}{
		{"gpu[01-03", 0, "'[' without ']'"},
		{"gpu01]", 0, "']' without '['"},
		{"gpu[[1]]", 0, "nested or unbalanced"},
		{"gpu[a-b]", 0, "not N or N-M"},
		{"gpu[3-1]", 0, "runs backwards"},
		{"gpu[1-2],,b", 0, "empty name between commas"},
		{"gpu[1-100001]", 0, "more than 100000 names"},
		{"a[1-5],b[1-5]", 8, "more than 8 names"},
		{"r[1-100]-n[1-100]", 9999, "more than 9999 names"},
		{"a,b,c", 2, "more than 2 names"},
		{strings.Repeat("a[1]", 9), 0, "more than 8 bracketed ranges"},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			_, err := ExpandHostlist(c.in, c.max)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
}

// TestExpandHostlistAtBound: exactly the bound is allowed.
func TestExpandHostlistAtBound(t *testing.T) {
	got, err := ExpandHostlist("n[1-100000]", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != MaxHostlistNames || got[len(got)-1] != "n100000" {
		t.Fatalf("got %d names ending %q, want %d ending n100000", len(got), got[len(got)-1], MaxHostlistNames)
	}
}
