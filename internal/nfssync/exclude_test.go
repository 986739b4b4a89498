package nfssync

import "testing"

func TestMatcher(t *testing.T) {
	m, err := NewMatcher([]string{"*.swp", ".nfs*", ".git/objects/**", "/scratch/*.tmp", "build/**/*.o"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{"a.swp", true},
		{"home/alice/.x.swp", true},
		{"home/alice/x.swpx", false},
		{"home/.nfs000123", true},
		{"proj/.git/objects/ab/cdef", true},
		{".git/objects/pack/p.pack", true},
		{"proj/.git/config", false},
		{"proj/git/objects/ab", false},
		{"scratch/x.tmp", true},
		{"home/scratch/x.tmp", false},
		{"scratch/sub/x.tmp", false},
		{"a/build/x.o", true},
		{"a/build/deep/er/x.o", true},
		{"a/build/x.c", false},
		{"notes.txt", false},
	} {
		t.Run(tc.rel, func(t *testing.T) {
			if got := m.Match(tc.rel); got != tc.want {
				t.Errorf("Match(%q) = %v, want %v", tc.rel, got, tc.want)
			}
		})
	}
}

func TestMatcherRejects(t *testing.T) {
	for _, p := range []string{"[", "a//b", "/"} {
		t.Run(p, func(t *testing.T) {
			if _, err := NewMatcher([]string{p}); err == nil {
				t.Errorf("NewMatcher(%q) accepted a bad pattern", p)
			}
		})
	}
}
