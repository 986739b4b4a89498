package slurmstate

import (
	"strings"
	"testing"
)

// TestParseLongLines: a line near the output bound parses in linear
// time: words that continue a value, and many Reason= fields, each of
// which looks ahead for a [user@time] that never comes.
func TestParseLongLines(t *testing.T) {
	const words = 400_000
	cases := []struct {
		name, line string
		reason     string
	}{
		{"continued value", "NodeName=a State=IDLE OS=" + strings.Repeat("w ", words), ""},
		{"many reasons", "NodeName=a State=IDLE " + strings.Repeat("Reason=x ", words), "x"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			nodes, err := ParseNodes([]byte(c.line), zone)
			if err != nil {
				t.Fatal(err)
			}
			if nodes[0].Reason != c.reason {
				t.Errorf("reason %q, want %q", nodes[0].Reason, c.reason)
			}
		})
	}
}
