package table

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	p := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(p, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(p)
	if err != nil {
		t.Fatalf("%v (run go test -update once)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s", name, diff)
	}
}

func sample() *Table {
	cols := []Column{
		{Key: "team", Title: "TEAM", Kind: Text},
		{Key: "alloc_gpu", Title: "ALLOC", Kind: GPUSeconds},
		{Key: "used_gpu", Title: "USED", Kind: GPUSeconds, Drop: 2},
		{Key: "efficiency_pct", Title: "EFF%", Kind: Percent, Drop: 1},
		{Key: "energy_kwh", Title: "kWh", Kind: KWh, Drop: 3},
		{Key: "jobs", Title: "JOBS", Kind: Int, Drop: 4},
	}
	return &Table{
		Title:   "GPU usage by team, 2026-11-01 – 2026-11-08 (UTC)",
		Columns: cols,
		Meta:    []KV{{"report", "teams"}, {"start", "2026-11-01T00:00:00Z"}},
		Rows: []Row{
			{Cells: []any{"vision, \"cv\" lab", int64(45_000_000), 30_000_000.5, 66.67, 1234.5678, int64(12345)}, Ref: 90_000_000},
			{Cells: []any{"nlp", int64(36_000), 0.0, 0.0, 0.25, int64(3)}, Ref: 90_000_000},
			{Cells: []any{"(unassigned)", int64(7200), nil, nil, nil, int64(1)}, Ref: 90_000_000},
		},
		Notes: []string{"efficiency = used / allocated"},
	}
}

// treeSample is an organisation over two teams: the terminal indents
// the teams and leaves the level column out; machine formats keep it.
func treeSample() *Table {
	return &Table{
		Columns: []Column{
			{Key: "team", Title: "TEAM", Kind: Text, Parent: true},
			{Key: "user", Title: "USER", Kind: Text},
			{Key: "alloc_gpu", Title: "ALLOC", Kind: GPUSeconds},
			{Key: "level", Title: "LEVEL", Kind: Int, Machine: true},
		},
		Rows: []Row{
			{Cells: []any{"acme", nil, int64(12), int64(1)}},
			{Cells: []any{"vision", nil, int64(8), int64(2)}, Indent: 1},
			{Cells: []any{"vision", "alice", int64(8), int64(2)}, Indent: 1, Child: true},
			{Cells: []any{"nlp", nil, int64(4), int64(2)}, Indent: 1},
			{Cells: []any{"nlp", "bob", int64(4), int64(2)}, Indent: 1, Child: true},
			{Cells: []any{"TOTAL", nil, int64(12), nil}, Footer: true},
		},
	}
}

func render(t *testing.T, tb *Table, o Options) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Write(&b, tb, o); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGolden(t *testing.T) {
	tests := []struct {
		name string
		o    Options
	}{
		{"aligned.txt", Options{Format: Aligned}},
		{"aligned_minutes.txt", Options{Format: Aligned, Units: Minutes}},
		{"aligned_percent.txt", Options{Format: Aligned, Units: Pct}},
		{"aligned_noheader.txt", Options{Format: Aligned, NoHeader: true}},
		{"aligned_width50.txt", Options{Format: Aligned, Width: 50}},
		{"aligned_width30.txt", Options{Format: Aligned, Width: 30}},
		{"report.csv", Options{Format: CSV}},
		{"report_noheader.csv", Options{Format: CSV, NoHeader: true}},
		{"report.tsv", Options{Format: TSV}},
		{"report_parsable.txt", Options{Format: Parsable}},
		{"report.json", Options{Format: JSON}},
		{"report_minutes.json", Options{Format: JSON, Units: Minutes}},
		{"aligned_seconds.txt", Options{Format: Aligned, Units: Seconds}},
		{"report_seconds.csv", Options{Format: CSV, Units: Seconds}},
		{"tree.txt", Options{Format: Aligned}},
		{"tree_parsable.txt", Options{Format: Parsable, Units: Seconds}},
	}
	for _, tt := range tests {
		tb := sample()
		if strings.HasPrefix(tt.name, "tree") {
			tb = treeSample()
		}
		t.Run(tt.name, func(t *testing.T) { golden(t, tt.name, render(t, tb, tt.o)) })
	}
}

func TestWidthFits(t *testing.T) {
	for _, w := range []int{120, 80, 60, 50, 40, 30, 20} {
		out := render(t, sample(), Options{Width: w})
		lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
		for _, l := range lines[2:] { // the title may be longer
			if strings.HasPrefix(l, "(not shown") || strings.HasPrefix(l, "efficiency") {
				continue
			}
			// Columns that never drop (team ≥ 6, alloc) may exceed a
			// tiny terminal; from 30 columns up everything fits.
			if n := utf8.RuneCountInString(l); w >= 30 && n > w {
				t.Errorf("width %d: line of %d runes: %q", w, n, l)
			}
		}
	}
}

// CSV read back gives the machine values, which give back the input in
// the chosen unit.
func TestCSVRoundTrip(t *testing.T) {
	for _, u := range []Units{Seconds, Hours, Minutes, Pct} {
		tb := sample()
		out := render(t, tb, Options{Format: CSV, Units: u})
		recs, err := csv.NewReader(bytes.NewReader(out)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(tb.Rows)+1 {
			t.Fatalf("%d records", len(recs))
		}
		for r, row := range tb.Rows {
			rec := recs[r+1]
			if rec[0] != row.Cells[0] {
				t.Errorf("%s: team %q, want %q", u, rec[0], row.Cells[0])
			}
			checkNum(t, rec[1], toFloat(row.Cells[1]), u, row.Ref)
			if row.Cells[2] == nil {
				if rec[2] != "" {
					t.Errorf("missing value written as %q", rec[2])
				}
			} else {
				checkNum(t, rec[2], toFloat(row.Cells[2]), u, row.Ref)
			}
			if rec[5] != strconv.FormatInt(row.Cells[5].(int64), 10) {
				t.Errorf("jobs %q", rec[5])
			}
		}
	}
}

func checkNum(t *testing.T, s string, gpuSeconds float64, u Units, ref float64) {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	var back float64
	switch u {
	case Seconds:
		back = v
	case Hours:
		back = v * 3600
	case Minutes:
		back = v * 60
	case Pct:
		back = v / 100 * ref
	}
	tol := map[Units]float64{Seconds: 0.5, Hours: 3600 * 0.5e-6, Minutes: 60 * 0.5e-4, Pct: ref * 0.5e-6}[u] * 1.0001
	if math.Abs(back-gpuSeconds) > tol {
		t.Errorf("%s: %q reads back as %v GPU-s, want %v", u, s, back, gpuSeconds)
	}
}

func TestJSONRoundTrip(t *testing.T) {
	out := render(t, sample(), Options{Format: JSON})
	var got struct {
		Report string           `json:"report"`
		Units  string           `json:"units"`
		Rows   []map[string]any `json:"rows"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	if got.Report != "teams" || got.Units != "hours" || len(got.Rows) != 3 {
		t.Fatalf("decoded %+v", got)
	}
	if got.Rows[0]["alloc_gpu_hours"] != 12500.0 || got.Rows[2]["used_gpu_hours"] != nil || got.Rows[1]["jobs"] != 3.0 {
		t.Errorf("rows %v", got.Rows)
	}
	// Keys keep the column order.
	first := strings.Index(string(out), `"team"`)
	last := strings.Index(string(out), `"jobs"`)
	if first < 0 || last < first {
		t.Errorf("column order lost:\n%s", out)
	}
}

func TestParse(t *testing.T) {
	if _, err := ParseFormat("xml"); err == nil || err.Error() != `--format "xml" is not table, csv, tsv or json` {
		t.Errorf("format: %v", err)
	}
	if _, err := ParseUnits("days"); err == nil || err.Error() != `--units "days" is not seconds, minutes, hours or percent` {
		t.Errorf("units: %v", err)
	}
	for in, want := range map[string]Format{"": Aligned, "CSV": CSV, "tsv": TSV, "json": JSON, "table": Aligned} {
		if f, err := ParseFormat(in); err != nil || f != want {
			t.Errorf("ParseFormat(%q) = %q, %v", in, f, err)
		}
	}
}

// TestSeconds: -t seconds writes whole GPU-seconds, exact for allocated
// time however large, rounded for used and idle.
func TestSeconds(t *testing.T) {
	for in, want := range map[string]Units{"seconds": Seconds, "Seconds": Seconds, "HOURS": Hours, "percent": Pct} {
		if u, err := ParseUnits(in); err != nil || u != want {
			t.Errorf("ParseUnits(%q) = %q, %v", in, u, err)
		}
	}
	c := Column{Key: "alloc_gpu", Kind: GPUSeconds}
	tests := []struct {
		cell any
		want any
	}{
		{int64(9_007_199_254_740_993), int64(9_007_199_254_740_993)}, // past float64's exact integers
		{int64(8), int64(8)},
		{12.5, int64(13)},
		{12.4999, int64(12)},
		{nil, nil},
	}
	for _, tt := range tests {
		if got := value(c, tt.cell, 0, Seconds); got != tt.want {
			t.Errorf("value(%v) = %v (%T), want %v", tt.cell, got, got, tt.want)
		}
	}
	if got := c.KeyIn(Seconds); got != "alloc_gpu_seconds" {
		t.Errorf("key %q", got)
	}
}

func TestThousands(t *testing.T) {
	for in, want := range map[float64]string{0: "0.0", 999.94: "999.9", 1234.56: "1,234.6", 1234567: "1,234,567.0", -1234.5: "-1,234.5", -0.01: "0.0"} {
		if got := thousands(in, 1); got != want {
			t.Errorf("thousands(%v) = %q, want %q", in, got, want)
		}
	}
}

func TestSlurmElapsed(t *testing.T) {
	for in, want := range map[int64]string{0: "00:00:00", 59: "00:00:59", 3661: "01:01:01", 86400 + 7200: "1-02:00:00", -5: "00:00:00"} {
		if got := slurmElapsed(in); got != want {
			t.Errorf("slurmElapsed(%d) = %q, want %q", in, got, want)
		}
	}
}

// TestUnitOf: a name's unit is read from its last part, the longer of
// two parts that end alike winning (_gpu_seconds is not _s).
func TestUnitOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		want Unit
	}{
		{"nvlink_rx_bytes_per_s", UnitBytesPerSecond}, {"alloc_gpu_seconds", UnitGPUSeconds}, {"sample_s", UnitSeconds},
		{"idle_seconds", UnitSeconds}, {"seconds", UnitSeconds}, {"alloc_gpu_minutes", UnitGPUMinutes}, {"used_gpu_hours", UnitGPUHours},
		{"share_gpu_pct", UnitShare}, {"util_pct", UnitPercent}, {"util_max", UnitPercent}, {"power_w", UnitWatts},
		{"energy_mj", UnitMillijoules}, {"energy_kwh", UnitKWh}, {"mem_used_mib", UnitMiB}, {"clock_sm_mhz", UnitMHz},
		{"temp_c", UnitCelsius}, {"jobs", NoUnit}, {"", NoUnit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnitOf(tc.name); got != tc.want {
				t.Errorf("UnitOf(%q) = %v, want %v", tc.name, got, tc.want)
			}
		})
	}
}
