package store

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// packRun packs rows as one run.
func packRun(t *testing.T, rows []sampleRow) []byte {
	t.Helper()
	var p packState
	var out []byte
	for i := range rows {
		var err error
		if out, err = appendPacked(out, &p, &rows[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// unpackRun decodes a run of GPU gid into rows.
func unpackRun(data []byte, gid int64) ([]sampleRow, error) {
	var out []sampleRow
	err := eachPacked(data, gid, func(r *sampleRow) error {
		out = append(out, *r)
		return nil
	})
	return out, err
}

// steadyRun is n samples of one GPU every 10 s as a busy job makes them:
// utilization, memory, power, temperature and clock moving each sample,
// the energy counter rising by each sample's delta.
func steadyRun(rng *rand.Rand, gid int64, n int) []sampleRow {
	var out []sampleRow
	energy := int64(81_000_000_000)
	for i := range n {
		var r sampleRow
		r.put(colGPU, gid)
		r.put(colT, int64(1_772_445_600_000+10_000*i))
		r.put(colInterval, int64(10_000))
		r.put(colJob, int64(4_123_456))
		r.put(colUtil, int64(60+rng.IntN(40)))
		r.put(colMemUtil, int64(20+rng.IntN(30)))
		r.put(colMemUsed, int64(40_000+rng.IntN(2_000)))
		power := int64(250_000 + rng.IntN(150_000))
		r.put(colPower, power)
		delta := power * 10
		energy += delta
		r.put(colEnergy, energy)
		r.put(colEnergyDelta, delta)
		r.put(colTemp, int64(60+rng.IntN(15)))
		r.put(colSMClock, int64(1_400+rng.IntN(10)*15))
		r.put(colProcs, int64(1))
		out = append(out, r)
	}
	return out
}

// TestPackedSamplesRoundTrip: a packed run reads back as the rows it was
// made of, whatever the columns hold (absent ones, text, shared jobs,
// extreme values, columns coming and going), and a busy GPU's 5 minutes
// cost at most 20 bytes a sample (issue 35's target), its first sample
// included.
func TestPackedSamplesRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	odd := steadyRun(rng, 3, 6)
	odd[1].drop(colUtil)
	odd[1].drop(colEnergy)
	odd[2].putText(colJobs, `[{"job":7,"restart":0,"share":0.5},{"job":8,"restart":1,"share":0.5,"idle":true}]`)
	odd[2].putText(colMissing, "power: ERROR_NOT_SUPPORTED")
	odd[3].put(colEnergy, int64(math.MaxInt64))
	odd[3].put(colTemp, int64(math.MinInt64))
	odd[4].putText(colMetrics, `{}`)
	odd[4].put(colT, odd[4].ints[colT]-25_000) // closer than the interval
	last := sampleRow{}                        // nothing NVML could give
	last.put(colGPU, odd[5].ints[colGPU])
	last.put(colT, odd[5].ints[colT])
	odd[5] = last
	random := make([]sampleRow, 200)
	tm := int64(0)
	for i := range random {
		r := &random[i]
		r.put(colGPU, int64(9))
		tm += rng.Int64N(1 << 40)
		r.put(colT, tm)
		for col := colInterval; col < nSampleCols; col++ {
			if rng.IntN(3) == 0 {
				continue
			}
			switch col {
			case colJobs, colMissing, colMetrics:
				r.putText(col, string(rune('a'+rng.IntN(26))))
			default:
				r.put(col, int64(rng.Uint64()))
			}
		}
	}
	tests := []struct {
		name     string
		rows     []sampleRow
		maxBytes float64 // a sample, 0 for no bound
	}{
		{name: "a busy GPU's 5 minutes", rows: steadyRun(rng, 1, 30), maxBytes: 20},
		{name: "an hour", rows: steadyRun(rng, 1, 360), maxBytes: 20},
		{name: "odd columns", rows: odd},
		{name: "random values", rows: random},
		{name: "one sample", rows: steadyRun(rng, 1, 1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			gid := tt.rows[0].ints[colGPU]
			data := packRun(t, tt.rows)
			got, err := unpackRun(data, gid)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.rows, got, cmp.AllowUnexported(sampleRow{})); d != "" {
				t.Errorf("unpacked (-packed +unpacked):\n%s", d)
			}
			per := float64(len(data)) / float64(len(tt.rows))
			if tt.maxBytes > 0 && per > tt.maxBytes {
				t.Errorf("%.1f bytes a sample, want at most %.0f", per, tt.maxBytes)
			}
			t.Logf("%d samples: %.1f bytes a sample", len(tt.rows), per)
		})
	}
}

// TestPackedSamplesRefused: a packed value that was cut short or
// altered is an error, never a panic or a sample made up.
func TestPackedSamplesRefused(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rows := steadyRun(rng, 1, 5)
	rows[2].putText(colJobs, `[{"job":7,"share":1}]`)
	data := packRun(t, rows)
	for cut := 1; cut < len(data); cut++ {
		got, err := unpackRun(data[:cut], 1)
		if err == nil && len(got) >= len(rows) {
			t.Fatalf("cut at %d of %d: %d samples and no error", cut, len(data), len(got))
		}
	}
	for _, bad := range [][]byte{
		{0x00, 0x00},                   // the first sample without its column set
		{0x00, 0xff, 0xff, 0xff, 0x7f}, // a head with bits past the columns
		{0x00, 0x01, 0x01},             // the GPU column in the set
	} {
		if _, err := unpackRun(bad, 1); err == nil {
			t.Errorf("%x: no error", bad)
		}
	}
	stop := errors.New("stop")
	if err := eachPacked(data, 1, func(*sampleRow) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("the callback's error: got %v", err)
	}
}

// TestEachPackedDoesNotBox: decoding a pack allocates nothing a sample
// (the row, once a pack, at most), where boxing each integer into a
// driver.Value cost 8 a sample: the board decodes millions of them.
func TestEachPackedDoesNotBox(t *testing.T) {
	rows := steadyRun(rand.New(rand.NewPCG(35, 5)), 1, 30)
	rows[7].putText(colJobs, `[{"job":7,"share":1}]`) // a text is one
	data := packRun(t, rows)
	n := 0
	got := testing.AllocsPerRun(20, func() {
		if err := eachPacked(data, 1, func(*sampleRow) error { n++; return nil }); err != nil {
			t.Fatal(err)
		}
	})
	if n == 0 {
		t.Fatal("no sample decoded")
	}
	if got > 2 {
		t.Errorf("%.0f allocations for %d samples, want at most 2 (the row, the text)", got, len(rows))
	}
}

// BenchmarkEachPacked is the reader's cost: a busy GPU's 5 minutes (30
// samples) packed, then decoded whole (docs/performance.md, the last
// hour's fill); allocs/op over 30 is the allocations a sample:
//
//	go test -run '^$' -bench EachPacked ./internal/store/
func BenchmarkEachPacked(b *testing.B) {
	rows := steadyRun(rand.New(rand.NewPCG(35, 4)), 1, 30)
	var p packState
	var data []byte
	for i := range rows {
		var err error
		if data, err = appendPacked(data, &p, &rows[i]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		n := 0
		if err := eachPacked(data, 1, func(*sampleRow) error { n++; return nil }); err != nil {
			b.Fatal(err)
		}
		if n != len(rows) {
			b.Fatalf("%d samples, want %d", n, len(rows))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rows)), "ns/sample")
}
