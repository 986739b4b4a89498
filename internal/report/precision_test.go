package report

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
)

// noise is a figure written with float noise: a run of 0s or 9s deep in
// its decimals (16736.910000000003, 756.1999999999999).
var noise = regexp.MustCompile(`\d\.\d*(000000|999999)\d`)

// awkwardLedger is a ledger whose figures are awkward floats: samples of
// 10 s at 33 % and 71 % (used seconds 3.3 and 7.1 each), power in odd
// milliwatts, a metric of a third, an energy counter; and the agent's
// aggregates with the sums the issue saw.
func awkwardLedger(t *testing.T) string {
	t.Helper()
	now := at(7200)
	loc := reportfixture.BuildLedger(t, []reportfixture.Job{
		{ID: 9, User: "alice", Acct: "vision", Part: "gpu", Node: "gpu01", GPUs: 2, Start: reportfixture.T0 + 100, End: reportfixture.T0 + 3100},
	}, now)
	var samples []record.Sample
	counter := [2]uint64{5_000_000_001, 7_000_000_003}
	for s := 100; s < 3100; s += 10 {
		for g := range 2 {
			counter[g] += 3_333_333 + uint64(g)*1_111
			c := counter[g]
			x := fixtureSample(g, float64(s), 9, uint32(33+38*((s/10+g)%2)), 312_345+uint32(s), &c)
			x.Metrics = map[string]float64{"sm_active_pct": 100.0 / 3, "power_throttle_pct": 0.1 + 0.2}
			samples = append(samples, x)
		}
	}
	h := &record.SegmentHeader{Cluster: "c1", Node: "gpu01", Seq: 1, Interval: 10, Start: at(100), Metrics: []string{"sm_active_pct", "power_throttle_pct"}}
	var aggs []record.JobGPU
	for g := range 2 {
		aggs = append(aggs, record.JobGPU{Seq: 1, Final: true, Cluster: "c1", Node: "gpu01", Job: 9, UUID: "GPU-gpu01-" + strconv.Itoa(g), Index: g,
			First: at(100), Last: at(3100), Samples: 300, SampleSeconds: 16736.910000000003, UtilSeconds: 16760.999999999993 / 2,
			UtilMax: 67, MemMaxMiB: 1234, MemTotalMiB: 81559, EnergyMJ: 998_877_665, IdleSeconds: 756.1999999999999})
	}
	ingestInto(t, loc, now, h, samples, aggs...)
	return loc
}

// checkFigure fails when the figure s of key has more decimals than its
// unit's (table.UnitOf) or shows float noise.
func checkFigure(t *testing.T, where, key, s string) {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return // not a figure
	}
	u := table.UnitOf(key)
	if u.Round(v) != v || noise.MatchString(s) {
		t.Errorf("%s: %s = %s, more than the %d decimals of its unit", where, key, s, u.Places())
	}
}

// checkCSV checks every figure of a CSV (or TSV, '|') with a header.
func checkCSV(t *testing.T, where string, data []byte, sep rune) {
	t.Helper()
	r := csv.NewReader(bytes.NewReader(data))
	r.Comma, r.LazyQuotes, r.FieldsPerRecord = sep, true, -1
	recs, err := r.ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", where, err)
	}
	if len(recs) < 2 {
		t.Fatalf("%s: no rows:\n%s", where, data)
	}
	for _, rec := range recs[1:] {
		for i, cell := range rec {
			checkFigure(t, where, recs[0][i], cell)
		}
	}
}

// checkJSON checks every number of each JSON value in data (one object,
// or one a line), by its key; a metric's mean and peak by its name.
func checkJSON(t *testing.T, where string, data []byte) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	n := 0
	for dec.More() {
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("%s: %v", where, err)
		}
		walkJSON(t, where, "", v)
		n++
	}
	if n == 0 {
		t.Fatalf("%s: nothing written", where)
	}
}

func walkJSON(t *testing.T, where, key string, v any) {
	switch x := v.(type) {
	case json.Number:
		checkFigure(t, where, key, x.String())
	case []any:
		for _, e := range x {
			walkJSON(t, where, key, e)
		}
	case map[string]any:
		name, _ := x["name"].(string)
		for k, e := range x {
			if (k == "mean" || k == "peak") && name != "" {
				k = name
			}
			walkJSON(t, where, k, e)
		}
	}
}

// TestExportPrecision: every export format, report format and unit, and
// the job's JSON write each figure to its unit's precision, on a ledger
// of awkward floats: no 16736.910000000003 or 756.1999999999999.
func TestExportPrecision(t *testing.T) {
	loc := awkwardLedger(t)
	db := openTest(t, loc)
	ctx := context.Background()
	now := at(7200)
	w := timespec.Window{Start: at(0), End: now}
	for _, kind := range []string{"jobs", "gpus", "samples"} {
		for _, format := range []string{"csv", "jsonl"} {
			t.Run("export "+kind+" "+format, func(t *testing.T) {
				var out bytes.Buffer
				if _, err := db.Export(ctx, ExportOptions{Kind: kind, Format: format, Out: &out, Window: w, Now: now}); err != nil {
					t.Fatal(err)
				}
				if format == "csv" {
					checkCSV(t, kind, out.Bytes(), ',')
				} else {
					checkJSON(t, kind, out.Bytes())
				}
			})
		}
	}
	t.Run("export samples --human", func(t *testing.T) {
		var out bytes.Buffer
		spec := JobSpec{ID: 9, Restart: -1}
		if _, err := db.Export(ctx, ExportOptions{Kind: "samples", Out: &out, Job: &spec, Human: true, Window: w, Now: now}); err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(&out).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		for i, key := range recs[0] {
			cell := recs[1][i]
			if _, err := strconv.ParseFloat(cell, 64); err == nil && key != "index" && key != "job_id" && key != "restart" && key != "idle" {
				t.Errorf("--human left %s raw: %s", key, cell)
			}
			if noise.MatchString(cell) {
				t.Errorf("--human %s = %s", key, cell)
			}
			num, _, _ := strings.Cut(cell, " ")
			if _, frac, ok := strings.Cut(num, "."); ok && key != "t_ms" && key != "interval_ms" && len(frac) > max(table.UnitOf(key).HumanPlaces(), 3) {
				t.Errorf("--human %s = %s: more decimals than its unit's", key, cell)
			}
		}
	})
	for _, kind := range []string{"users", "teams", "tree", "nodes", "partitions"} {
		r, err := db.Report(ctx, Request{Kind: kind, Window: HourWindow(w), Mapping: &teams.Mapping{}, Limit: 100})
		if err != nil {
			t.Fatalf("report %s: %v", kind, err)
		}
		for _, u := range []table.Units{table.Seconds, table.Minutes, table.Hours, table.Pct} {
			for _, f := range []table.Format{table.CSV, table.TSV, table.Parsable, table.JSON} {
				t.Run("report "+kind+" "+string(u)+" "+string(f), func(t *testing.T) {
					var out bytes.Buffer
					if err := table.Write(&out, r, table.Options{Format: f, Units: u}); err != nil {
						t.Fatal(err)
					}
					switch f {
					case table.JSON:
						checkJSON(t, kind, out.Bytes())
					case table.TSV:
						checkCSV(t, kind, out.Bytes(), '\t')
					case table.Parsable:
						checkCSV(t, kind, out.Bytes(), '|')
					default:
						checkCSV(t, kind, out.Bytes(), ',')
					}
				})
			}
		}
	}
	t.Run("job --json", func(t *testing.T) {
		det, err := db.Job(ctx, "", JobSpec{ID: 9, Restart: -1}, now)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		if err := WriteJobJSON(&out, det, &teams.Mapping{}, ""); err != nil {
			t.Fatal(err)
		}
		// Allocated hours are whole seconds / 3600, to GPU-hours' six
		// decimals: within 0.0018 s of whole seconds.
		var alloc struct {
			H float64 `json:"alloc_gpu_hours"`
		}
		if err := json.Unmarshal(out.Bytes(), &alloc); err != nil {
			t.Fatal(err)
		}
		if s := alloc.H * 3600; alloc.H == 0 || math.Abs(s-math.Round(s)) > 0.0019 {
			t.Errorf("alloc_gpu_hours %v is not whole seconds", alloc.H)
		}
		checkJSON(t, "job", out.Bytes())
	})
}
