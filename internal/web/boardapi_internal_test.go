package web

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIndentJSON: indentJSON writes what writeJSON's encoder writes, byte
// for byte: strings holding brackets, quotes, backslashes, colons and
// commas, empty and nested arrays and objects, and whole status documents.
func TestIndentJSON(t *testing.T) {
	tricky := map[string]any{
		"s":      `a "quoted" [x], {y}: \ z \\" <b>&`,
		"empty":  []int{},
		"obj":    map[string]any{},
		"nested": []any{[]any{}, map[string]any{"k": []any{1, nil, true, 2.5}}, "]"},
		"null":   nil,
		"u":      "ß\u2028\t\n",
	}
	for _, tc := range []struct {
		name string
		v    any
	}{
		{"tricky", tricky},
		{"number", 42},
		{"empty object", struct{}{}},
		{"status", func() any { s := viewSnapshot(); return s.View().Status(s.Board.Nodes) }()},
		{"strip status", func() any { s := stripSnapshot(); return s.View().StatusLastHour(s.Board.Nodes) }()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetIndent("", "  ")
			if err := enc.Encode(tc.v); err != nil {
				t.Fatal(err)
			}
			compact, err := json.Marshal(tc.v)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.String(), string(indentJSON(nil, compact))); diff != "" {
				t.Errorf("(-encoder +indentJSON):\n%s", diff)
			}
		})
	}
}
