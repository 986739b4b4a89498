package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestBudgetSection(t *testing.T) {
	for _, tc := range []struct {
		name, toml string
		want       string // error; "" fine
	}{
		{"none", "", ""},
		{"entries", `
[budget]
fiscal_start = 4
warn = [75, 100]

[[budget.entry]]
account = "vision"
period = "fiscal-year"
amount = 5000
unit = "billing"

[[budget.entry]]
account = "nlp"
period = "range"
from = "2026-04-01"
to = "2026-06-30"
amount = 300
`, ""},
		{"fiscal start", "[budget]\nfiscal_start = 13\n", `line 2: key "budget.fiscal_start": 13 is not a month 1..12`},
		{"warn falls", "[budget]\nwarn = [80, 50]\n", `line 2: key "budget.warn": [80 50] is not rising percents within 1..1000`},
		// checked by the commands that read budgets, not by every
		// program: the hooks keep accounting
		{"bad entry", "[[budget.entry]]\naccount = \"nlp\"\nperiod = \"month\"\namount = -1\n", ""},
		{"unknown key", "[[budget.entry]]\naccount = \"nlp\"\nhours = 3\n",
			`line 3: unknown key "budget.entry.hours" (see docs/configuration.md for the keys)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := Default()
			err := Parse([]byte(tc.toml), &cfg)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("error (-want +got):\n%s", diff)
			}
			if strings.Contains(got, "\n") {
				t.Errorf("error is more than one line: %q", got)
			}
		})
	}
	cfg := Default()
	if diff := cmp.Diff(Budget{FiscalStart: 1, Warn: []int{50, 80, 100}, WarnRunOut: true}, cfg.Budget); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}
