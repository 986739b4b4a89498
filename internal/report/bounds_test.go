package report

import (
	"testing"
)

func TestSuggest(t *testing.T) {
	known := map[string]bool{"alice": true, "alicia": true, "bob": true, "carol": true, "christopher": true}
	tests := []struct{ in, want string }{
		{"alce", ": did you mean alice?"},
		{"alic", ": did you mean alice, alicia?"},
		{"Bob", ": did you mean bob?"},
		{"car", ": did you mean carol?"},
		{"christophr", ": did you mean christopher?"},
		{"zed", ""},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			if got := suggest(tt.in, known); got != tt.want {
				t.Errorf("suggest(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
	if d := editDistance("kitten", "sitting", 5); d != 3 {
		t.Errorf("editDistance = %d, want 3", d)
	}
}
