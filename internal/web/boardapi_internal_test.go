package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
)

// TestIndentJSON: indentJSON writes what writeJSON's encoder writes, byte
// for byte: strings holding brackets, quotes, backslashes, colons and
// commas, empty and nested arrays and objects, whole status documents,
// and (as it copies scalars a run at a time and newlines from a buffer
// grown with the depth) numbers, literals and strings at every place,
// nested deeper than that buffer first holds.
func TestIndentJSON(t *testing.T) {
	deep := any(map[string]any{"x": []any{1, -2.5e-7, "s"}})
	for range 20 {
		deep = []any{deep, true, map[string]any{"n": nil, "k": []any{false, 12345678901234}}}
	}
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
		{"deep", deep},
		{"scalars", []any{0, -1, 1.5, 1e21, true, false, nil, "", "x,y:z]"}},
		{"last of each", map[string]any{"a": []any{[]any{1}, map[string]any{"b": 2}}, "c": 3}},
		{"top scalar", 1234.5},
		{"top string", `a"b`},
		{"document", json.RawMessage(statusDoc10k(t))},
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

// BenchmarkStatusEncode is the status document of 10,000 GPUs (1,250
// nodes × 8, half busy with a process) encoded as writeJSON's encoder
// indents it and as apiBoard does (compact, then indentJSON), in one
// run: the ratio is what the one-pass indenting saves.
func BenchmarkStatusEncode(b *testing.B) {
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	var lives []record.Live
	for n := range 1250 {
		l := record.Live{Schema: record.LiveSchema, Cluster: "c1", Node: fmt.Sprintf("gpu%04d", n), Time: viewNow.Add(-4 * time.Second), Interval: 10}
		for i := range 8 {
			g := record.LiveGPU{Index: i, UUID: fmt.Sprintf("GPU-%04d-%d", n, i), Model: "NVIDIA H100", Util: u32(0),
				MemUsedMiB: u64(0), MemTotalMiB: u64(81920), PowerMW: u32(70_000), TempC: u32(40)}
			if i%2 == 0 {
				job := uint64(1000 + n*8 + i)
				g.Util = u32(80)
				g.Jobs = []record.LiveJob{{Job: job, User: fmt.Sprintf("u%d", job), Account: "physics", Start: viewNow.Add(-time.Hour)}}
				g.Procs = []record.LiveProc{{PID: uint32(job), User: fmt.Sprintf("u%d", job), Job: job, MemUsedMiB: 40960}}
			}
			l.GPUs = append(l.GPUs, g)
		}
		lives = append(lives, l)
	}
	bd := board.Build(lives, nil, nil, viewNow)
	doc := board.NewView(&bd, board.Meta{}, false, "").Status(bd.Nodes)
	b.Run("encoder", func(b *testing.B) {
		for b.Loop() {
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetIndent("", "  ")
			if err := enc.Encode(doc); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("indentJSON", func(b *testing.B) {
		for b.Loop() {
			c, err := json.Marshal(doc)
			if err != nil {
				b.Fatal(err)
			}
			indentJSON(make([]byte, 0, len(c)*2), c)
		}
	})
}
