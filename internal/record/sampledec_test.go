package record

import (
	"bytes"
	"encoding/json"
	"errors"
	"testing"
	"time"
	"unsafe"

	"github.com/google/go-cmp/cmp"
)

// plainSample is a line as the agent writes it with the default metric
// set, every field set.
func plainSample(t testing.TB) string { return sampleLine(t, nil) }

// fullSample is plainSample with every catalogue metric (agent.metrics =
// ["all"]).
func fullSample(t testing.TB) string {
	m := map[string]float64{}
	for i, c := range Catalogue {
		m[c.Name] = float64(i)*1234.5 + 0.25
	}
	return sampleLine(t, m)
}

func sampleLine(t testing.TB, metrics map[string]float64) string {
	t.Helper()
	u32 := func(v uint32) *uint32 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	s := Sample{
		Time: time.Date(2026, 3, 2, 10, 0, 0, 500_000_000, time.UTC), UUID: "GPU-0a1b2c3d-0000-1111-2222-333344445555", Index: 3,
		Jobs:    []JobShare{{Job: 4242, Restart: 1, Share: 0.75, Idle: true}, {Job: 4243, Share: 0.25}},
		GPUUtil: u32(87), MemUtil: u32(40), MemUsedMiB: u64(30000), MemTotalMiB: u64(81559), PowerMW: u32(350000),
		EnergyMJ: u64(123456789012), TempC: u32(61), SMClockMHz: u32(1980), Throttle: u64(4), ECCErrors: u64(0), XIDErrors: u64(0),
		Procs:   []Proc{{PID: 77, MemUsedMiB: 30000, Job: 4242}, {PID: 78, MemUsedMiB: 1, Foreign: true, CgroupError: "no cgroup"}},
		Missing: []string{"power: ERROR_NOT_SUPPORTED"},
		Metrics: metrics,
	}
	b, err := json.Marshal(&s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// decodeBoth decodes line with the fast decoder and with encoding/json.
func decodeBoth(line string) (fast Sample, fastOK bool, slow Sample, slowErr error) {
	var d SampleDecoder
	fastOK = d.Decode([]byte(line), &fast)
	slowErr = strict([]byte(line), &slow)
	return
}

func TestSampleDecoderAgreesWithEncodingJSON(t *testing.T) {
	plain := plainSample(t)
	tests := []struct {
		name string
		line string
		// fast: the fast decoder takes it (else encoding/json must).
		fast bool
	}{
		{"every field", plain, true},
		{"every metric", fullSample(t), true},
		{"minimal", `{"t":"2026-03-02T10:00:00Z","uuid":"GPU-12345678","index":0}`, true},
		{"spaces", ` { "t" : "2026-03-02T10:00:00Z" , "uuid":"GPU-12345678", "index" : 7 , "jobs" : [ ] } `, true},
		{"empty object", `{}`, true},
		{"empty arrays", `{"jobs":[],"procs":[],"missing":[]}`, true},
		{"float forms", `{"jobs":[{"job":1,"share":1e-1},{"job":2,"share":0.5E+0},{"job":3,"share":-0}]}`, true},
		{"negative index", `{"index":-3}`, true},
		{"time with offset", `{"t":"2026-03-02T12:00:00+02:00"}`, true},
		{"max uint64", `{"energy_mj":18446744073709551615}`, true},
		{"metrics", `{"metrics":{"sm_active_pct":87.5,"nvlink_tx_bytes_per_s":150000000000,"site_metric_w":-1e-3}}`, true},
		{"empty metrics", `{"metrics":{}}`, true},
		{"metrics spaces", `{"metrics" : { "sm_active_pct" : 1 , "x" : 2 } }`, true},
		{"MIG instance", `{"t":"2026-03-02T10:00:00Z","uuid":"MIG-12345678","index":1,"parent":"GPU-12345678","parent_share":0.42857142857142855}`, true},
		// Everything below goes to encoding/json, which accepts or refuses.
		{"other case key", `{"T":"2026-03-02T10:00:00Z"}`, false},
		{"unknown key", `{"t":"2026-03-02T10:00:00Z","extra":1}`, false},
		{"duplicate key", `{"index":1,"index":2}`, false},
		{"null pointer", `{"gpu_util":null}`, false},
		{"escaped string", `{"uuid":"GPU-1234\u00355678"}`, false},
		{"non-ASCII", `{"missing":["température"]}`, false},
		{"invalid UTF-8", "{\"missing\":[\"\xff\"]}", false},
		{"uint32 overflow", `{"gpu_util":4294967296}`, false},
		{"uint64 overflow", `{"energy_mj":18446744073709551616}`, false},
		{"negative uint", `{"gpu_util":-1}`, false},
		{"fraction in uint", `{"gpu_util":1.0}`, false},
		{"exponent in int", `{"index":1e2}`, false},
		{"leading zero", `{"index":01}`, false},
		{"string for number", `{"index":"1"}`, false},
		{"number for string", `{"uuid":5}`, false},
		{"bad time", `{"t":"2026-03-02 10:00:00"}`, false},
		{"bad time day", `{"t":"2026-02-30T10:00:00Z"}`, false},
		{"trailing comma", `{"index":1,}`, false},
		{"trailing data", `{"index":1} {"index":2}`, false},
		{"truncated", `{"index":1`, false},
		{"truncated string", `{"uuid":"GPU-`, false},
		{"bool typo", `{"jobs":[{"job":1,"share":1,"idle":tru}]}`, false},
		{"bool suffix", `{"jobs":[{"job":1,"share":1,"idle":truex}]}`, false},
		{"number suffix", `{"index":1x}`, false},
		{"double dot", `{"jobs":[{"share":1.5.3}]}`, false},
		{"unknown job key", `{"jobs":[{"job":1,"shares":1}]}`, false},
		{"duplicate job key", `{"jobs":[{"job":1,"job":2}]}`, false},
		{"unknown proc key", `{"procs":[{"pid":1,"gpu":0}]}`, false},
		{"share overflow", `{"jobs":[{"share":1e400}]}`, false},
		{"object for array", `{"jobs":{}}`, false},
		{"not an object", `[1,2]`, false},
		{"duplicate metric", `{"metrics":{"sm_active_pct":1,"sm_active_pct":2}}`, false},
		{"duplicate other metric", `{"metrics":{"x":1,"x":2}}`, false},
		{"null metric", `{"metrics":{"x":null}}`, false},
		{"string metric", `{"metrics":{"x":"1"}}`, false},
		{"metrics array", `{"metrics":[1]}`, false},
		{"metric overflow", `{"metrics":{"x":1e400}}`, false},
		{"parent share overflow", `{"parent_share":1e400}`, false},
		{"null parent share", `{"parent_share":null}`, false},
		{"duplicate parent", `{"parent":"GPU-12345678","parent":"GPU-87654321"}`, false},
		{"control char", "{\"uuid\":\"GPU-\x01\"}", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fast, ok, slow, slowErr := decodeBoth(tt.line)
			if ok != tt.fast {
				t.Fatalf("fast decoder took it: %v, want %v", ok, tt.fast)
			}
			if !ok {
				return
			}
			if slowErr != nil {
				t.Fatalf("fast decoder took a line encoding/json refuses (%v)", slowErr)
			}
			if d := cmp.Diff(slow, fast); d != "" {
				t.Fatalf("fast decode differs from encoding/json (-json +fast):\n%s", d)
			}
		})
	}
}

func FuzzSampleDecoder(f *testing.F) {
	f.Add(plainSample(f))
	f.Add(fullSample(f))
	f.Add(`{"t":"2026-03-02T10:00:00Z","uuid":"GPU-12345678","index":0,"jobs":[{"job":1,"share":1}]}`)
	f.Add(`{"jobs":[{"job":1,"share":1e-1,"idle":false}],"procs":[{"pid":1,"mem_mib":2,"foreign":true}]}`)
	f.Add(`{"index":-0,"missing":["a","b"]}`)
	f.Add(`{"metrics":{"sm_active_pct":87.5,"x":1e3}}`)
	f.Fuzz(func(t *testing.T, line string) {
		fast, ok, slow, slowErr := decodeBoth(line)
		if !ok {
			return
		}
		if slowErr != nil {
			t.Fatalf("fast decoder took %q, which encoding/json refuses (%v)", line, slowErr)
		}
		if d := cmp.Diff(slow, fast); d != "" {
			t.Fatalf("%q: fast decode differs from encoding/json (-json +fast):\n%s", line, d)
		}
	})
}

func BenchmarkSampleDecode(b *testing.B) {
	line := []byte(plainSample(b))
	b.Run("fast", func(b *testing.B) {
		var d SampleDecoder
		for b.Loop() {
			var s Sample
			if !d.Decode(line, &s) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			var s Sample
			if err := strict(line, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
	full := []byte(fullSample(b))
	b.Run("fast/all-metrics", func(b *testing.B) {
		var d SampleDecoder
		for b.Loop() {
			var s Sample
			if !d.Decode(full, &s) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("encoding/json/all-metrics", func(b *testing.B) {
		for b.Loop() {
			var s Sample
			if err := strict(full, &s); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// strict decodes data as ingest does when the fast decoder says no:
// encoding/json, no unknown fields, one value.
func strict(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("more than one JSON value")
	}
	return nil
}

// A values slab is whole pages, so the allocator rounds nothing up.
func TestValuesSlabIsWholePages(t *testing.T) {
	if size := valsSlabLen * unsafe.Sizeof(sampleValues{}); size%8192 != 0 {
		t.Errorf("values slab is %d bytes, not a whole number of 8 KiB pages", size)
	}
}
