package store

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
)

// seriesPackMs is the span of a series pack (series_packs, migration
// 0024): one GPU's 5-minute buckets of two UTC hours, of every job run
// on it, in one row, so that the row's key and overhead are paid once
// for about 24 buckets also when jobs are short (a run's pack held 3 of
// the simulated day's, at 40 bytes a bucket in all), and the row stays in
// its b-tree page (over 1 KB it spills into overflow pages, mostly
// empty).
const seriesPackMs = 7_200_000

// seriesFoldMs is the step of the fold mark: whole UTC days.
const seriesFoldMs = 86_400_000

// foldDay is the start of the UTC day that holds t (t ≥ 0).
func foldDay(t int64) int64 { return t - t%seriesFoldMs }

// seriesPackStart is the start of the pack that holds bucket t (t ≥ 0).
func seriesPackStart(t int64) int64 { return t - t%seriesPackMs }

// seriesPackV1 is the first byte of a pack: its encoding, so that a
// later one can be told from it.
const seriesPackV1 = 1

// seriesBucket is one stored bucket: its start (Unix ms) and sums.
type seriesBucket struct {
	bucket int64
	bucketAcc
}

// A bucket's flags (a uvarint): which values are present, and which
// differ from what the pack predicts for them, so that a full bucket of
// a steady job writes none but its sums and peaks.
const (
	bfUtilMax   = 1 << iota // util_max not NULL
	bfMemMax                // mem_max not NULL
	bfN                     // n differs from the bucket before's: a varint follows
	bfFirst                 // first_ms is off the GPU's sampling phase: a varint follows
	bfEnd                   // end_ms is off the phase after the bucket: a varint follows
	bfIdleAll               // idle_ms = window_ms
	bfIdleOther             // idle_ms neither 0 nor window_ms: a varint follows
	bfWindow                // window_ms differs from end − first: a varint follows
	bfUtilMs                // util_ms differs from window_ms: a varint follows
	bfPowerMs               // power_ms differs from window_ms: a varint follows
	bfEnergyN               // energy_n differs from n: a varint follows
	bfShareW                // util_share_w_ms differs from util_w_ms: 8 bytes follow
	bfGap                   // the bucket does not follow the one before: a uvarint follows
)

// seriesRun is one job run's buckets in a pack, in time order.
type seriesRun struct {
	job, restart int64
	buckets      []seriesBucket
}

// seriesPredict is what a pack's buckets are predicted from: the bucket
// before's values, carried from run to run (one GPU, one agent's
// sampling phase and power).
type seriesPredict struct {
	phase, n, powerW, powerMs, mem, job int64
}

func newSeriesPredict() seriesPredict { return seriesPredict{n: BucketMs / 10_000} }

// encodeSeriesPack appends the pack of t0 holding runs (sorted by job
// and restart, none empty) to dst in seriesPackV1: per run its job (from
// the run before's), restart and bucket count, then its buckets, each
// value written as a varint of its difference from what the bucket's
// other values or the bucket before predict. A steady job's bucket takes
// about 20 bytes where a row took 90: the first sample comes at the
// GPU's sampling phase and the last ends one bucket later, windows,
// utilization and power cover the span, utilization stays near its
// peak, power near the mean before, energy is power × time, memory peaks
// repeat.
func encodeSeriesPack(dst []byte, t0 int64, runs []seriesRun) []byte {
	dst = append(dst, seriesPackV1)
	st := newSeriesPredict()
	for _, r := range runs {
		dst = binary.AppendVarint(dst, r.job-st.job)
		st.job = r.job
		dst = binary.AppendVarint(dst, r.restart)
		dst = binary.AppendUvarint(dst, uint64(len(r.buckets)))
		next := t0
		for i := range r.buckets {
			dst = st.encode(dst, &r.buckets[i], next, i > 0)
			next = r.buckets[i].bucket + BucketMs
		}
	}
	return dst
}

// encode appends bucket b (expected at next; inRun: not its run's
// first, so that its first sample shows the sampling phase).
func (st *seriesPredict) encode(dst []byte, b *seriesBucket, next int64, inRun bool) []byte {
	var f uint64
	set := func(bit uint64, on bool) {
		if on {
			f |= bit
		}
	}
	shareBits := math.Float64bits(b.utilShareW)
	set(bfUtilMax, b.haveU)
	set(bfMemMax, b.haveM)
	set(bfN, b.n != st.n)
	set(bfFirst, b.first != b.bucket+st.phase)
	set(bfEnd, b.end != b.bucket+BucketMs+st.phase)
	set(bfIdleAll, b.idle != 0 && b.idle == b.window)
	set(bfIdleOther, b.idle != 0 && b.idle != b.window)
	set(bfWindow, b.window != b.end-b.first)
	set(bfUtilMs, b.utilMs != b.window)
	set(bfPowerMs, b.powerMs != b.window)
	set(bfEnergyN, b.energyN != b.n)
	set(bfShareW, shareBits != math.Float64bits(float64(b.utilW)))
	set(bfGap, b.bucket != next)
	dst = binary.AppendUvarint(dst, f)
	if f&bfGap != 0 {
		dst = binary.AppendUvarint(dst, uint64((b.bucket-next)/BucketMs))
	}
	if f&bfN != 0 {
		dst = binary.AppendVarint(dst, b.n-st.n)
	}
	if f&bfFirst != 0 {
		dst = binary.AppendVarint(dst, b.first-b.bucket-st.phase)
	}
	if f&bfEnd != 0 {
		dst = binary.AppendVarint(dst, b.end-b.bucket-BucketMs-st.phase)
	}
	if f&bfWindow != 0 {
		dst = binary.AppendVarint(dst, b.window-(b.end-b.first))
	}
	if f&bfIdleOther != 0 {
		dst = binary.AppendVarint(dst, b.idle)
	}
	if f&bfUtilMs != 0 {
		dst = binary.AppendVarint(dst, b.window-b.utilMs)
	}
	if b.haveU {
		dst = binary.AppendVarint(dst, b.utilMax-50)
		dst = binary.AppendVarint(dst, b.utilMax*b.utilMs-b.utilW)
	} else {
		dst = binary.AppendVarint(dst, b.utilW)
	}
	if f&bfShareW != 0 {
		dst = binary.LittleEndian.AppendUint64(dst, shareBits)
	}
	if f&bfPowerMs != 0 {
		dst = binary.AppendVarint(dst, b.window-b.powerMs)
	}
	dst = binary.AppendVarint(dst, b.powerW-predictPower(st.powerW, st.powerMs, b.powerMs))
	if b.haveM {
		dst = binary.AppendVarint(dst, b.memMax-st.mem)
		st.mem = b.memMax
	}
	if f&bfEnergyN != 0 {
		dst = binary.AppendVarint(dst, b.n-b.energyN)
	}
	dst = binary.AppendVarint(dst, b.energy-predictEnergy(b.energyN, b.powerW))
	st.after(b, inRun)
	return dst
}

// after moves the predictions on past bucket b.
func (st *seriesPredict) after(b *seriesBucket, inRun bool) {
	st.n, st.powerW, st.powerMs = b.n, b.powerW, b.powerMs
	if inRun {
		st.phase = b.first - b.bucket
	}
}

// predictPower is a bucket's Σ power × interval at the mean power of
// the bucket before.
func predictPower(prevW, prevMs, ms int64) int64 {
	if prevMs <= 0 {
		return 0
	}
	return prevW / prevMs * ms
}

// predictEnergy is a bucket's energy (mJ) from its Σ power (mW) ×
// interval (ms), when it has energy deltas at all.
func predictEnergy(energyN, powerW int64) int64 {
	if energyN == 0 {
		return 0
	}
	return powerW / 1000
}

var errSeriesPack = errors.New("series pack: truncated or unknown encoding")

// decodeSeriesPack calls fn for each bucket of the pack of t0 in data
// with its run, in order; fn's error stops it.
func decodeSeriesPack(t0 int64, data []byte, fn func(job, restart int64, b *seriesBucket) error) error {
	if len(data) == 0 || data[0] != seriesPackV1 {
		return errSeriesPack
	}
	d := packReader{b: data[1:]}
	st := newSeriesPredict()
	var b seriesBucket
	for len(d.b) > 0 {
		st.job += d.varint()
		job, restart, count := st.job, d.varint(), d.uvarint()
		if d.bad || count > uint64(len(d.b)) {
			return errSeriesPack
		}
		next := t0
		for i := range count {
			b = seriesBucket{}
			st.decode(&d, &b, next, i > 0)
			if d.bad {
				return errSeriesPack
			}
			next = b.bucket + BucketMs
			if err := fn(job, restart, &b); err != nil {
				return err
			}
		}
	}
	return nil
}

// decode reads bucket b as encode wrote it.
func (st *seriesPredict) decode(d *packReader, b *seriesBucket, next int64, inRun bool) {
	f := d.uvarint()
	b.haveU, b.haveM = f&bfUtilMax != 0, f&bfMemMax != 0
	b.bucket = next
	if f&bfGap != 0 {
		b.bucket += int64(d.uvarint()) * BucketMs
	}
	b.n = st.n
	if f&bfN != 0 {
		b.n += d.varint()
	}
	b.first = b.bucket + st.phase
	if f&bfFirst != 0 {
		b.first += d.varint()
	}
	b.end = b.bucket + BucketMs + st.phase
	if f&bfEnd != 0 {
		b.end += d.varint()
	}
	b.window = b.end - b.first
	if f&bfWindow != 0 {
		b.window += d.varint()
	}
	switch {
	case f&bfIdleAll != 0:
		b.idle = b.window
	case f&bfIdleOther != 0:
		b.idle = d.varint()
	}
	b.utilMs = b.window
	if f&bfUtilMs != 0 {
		b.utilMs -= d.varint()
	}
	if b.haveU {
		b.utilMax = d.varint() + 50
		b.utilW = b.utilMax*b.utilMs - d.varint()
	} else {
		b.utilW = d.varint()
	}
	b.utilShareW = float64(b.utilW)
	if f&bfShareW != 0 {
		b.utilShareW = math.Float64frombits(d.uint64())
	}
	b.powerMs = b.window
	if f&bfPowerMs != 0 {
		b.powerMs -= d.varint()
	}
	b.powerW = predictPower(st.powerW, st.powerMs, b.powerMs) + d.varint()
	if b.haveM {
		b.memMax = st.mem + d.varint()
		st.mem = b.memMax
	}
	b.energyN = b.n
	if f&bfEnergyN != 0 {
		b.energyN -= d.varint()
	}
	b.energy = predictEnergy(b.energyN, b.powerW) + d.varint()
	st.after(b, inRun)
}

// decodeSeriesPackAll is every run of the pack of t0 in data.
func decodeSeriesPackAll(t0 int64, data []byte) ([]seriesRun, error) {
	var out []seriesRun
	err := decodeSeriesPack(t0, data, func(job, restart int64, b *seriesBucket) error {
		if n := len(out); n == 0 || out[n-1].job != job || out[n-1].restart != restart {
			out = append(out, seriesRun{job: job, restart: restart})
		}
		out[len(out)-1].buckets = append(out[len(out)-1].buckets, *b)
		return nil
	})
	return out, err
}

// decodePackRun calls fn for the buckets of run (job, restart) in the
// pack of t0 in data, in time order (the runs before it decoded too:
// their values predict its).
func decodePackRun(t0 int64, data []byte, job, restart int64, fn func(b *seriesBucket) error) error {
	return decodeSeriesPack(t0, data, func(j, r int64, b *seriesBucket) error {
		if j != job || r != restart {
			return nil
		}
		return fn(b)
	})
}

// packReader reads a pack's values; bad is set at the first that runs
// past its end, and every read after returns 0.
type packReader struct {
	b   []byte
	bad bool
}

func (r *packReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.bad, r.b = true, nil
		return 0
	}
	r.b = r.b[n:]
	return v
}

// varint is binary.AppendVarint's value: zig-zag over a uvarint.
func (r *packReader) varint() int64 {
	u := r.uvarint()
	x := int64(u >> 1)
	if u&1 != 0 {
		x = ^x
	}
	return x
}

func (r *packReader) uint64() uint64 {
	if len(r.b) < 8 {
		r.bad, r.b = true, nil
		return 0
	}
	v := binary.LittleEndian.Uint64(r.b)
	r.b = r.b[8:]
	return v
}

// mergeBucket adds a's sums to b, as the row upsert did (upsertBucketSQL).
func mergeBucket(b *bucketAcc, a *bucketAcc) {
	b.n += a.n
	b.first, b.end = min(b.first, a.first), max(b.end, a.end)
	b.window += a.window
	b.idle += a.idle
	b.utilW += a.utilW
	b.utilMs += a.utilMs
	b.utilShareW += a.utilShareW
	b.powerW += a.powerW
	b.powerMs += a.powerMs
	if a.haveU && (!b.haveU || a.utilMax > b.utilMax) {
		b.utilMax, b.haveU = a.utilMax, true
	}
	if a.haveM && (!b.haveM || a.memMax > b.memMax) {
		b.memMax, b.haveM = a.memMax, true
	}
	b.energy += a.energy
	b.energyN += a.energyN
}

// packEnd is the latest end_ms of the runs' buckets (t1_ms of their
// pack).
func packEnd(runs []seriesRun) int64 {
	e := int64(math.MinInt64)
	for _, r := range runs {
		for i := range r.buckets {
			e = max(e, r.buckets[i].end)
		}
	}
	return e
}

// checkPackRuns tells whether runs fit one pack of t0: runs in order of
// job and restart, none empty, each one's buckets in the pack in order.
func checkPackRuns(t0 int64, runs []seriesRun) error {
	for i, r := range runs {
		if len(r.buckets) == 0 || (i > 0 && cmp.Or(cmp.Compare(runs[i-1].job, r.job), cmp.Compare(runs[i-1].restart, r.restart)) >= 0) {
			return fmt.Errorf("series pack of %d: run %d+%d out of place", t0, r.job, r.restart)
		}
		for j := range r.buckets {
			b := r.buckets[j].bucket
			if b%BucketMs != 0 || seriesPackStart(b) != t0 || (j > 0 && b <= r.buckets[j-1].bucket) {
				return fmt.Errorf("series pack of %d: bucket %d out of place", t0, b)
			}
		}
	}
	return nil
}

// addPackBucket adds bucket b of run (job, restart) to runs, in place:
// summed into a bucket already there (mergeBucket), else inserted.
func addPackBucket(runs []seriesRun, job, restart int64, b seriesBucket) []seriesRun {
	at, found := slices.BinarySearchFunc(runs, [2]int64{job, restart}, func(r seriesRun, k [2]int64) int {
		return cmp.Or(cmp.Compare(r.job, k[0]), cmp.Compare(r.restart, k[1]))
	})
	if !found {
		runs = slices.Insert(runs, at, seriesRun{job: job, restart: restart})
	}
	r := &runs[at]
	i, found := slices.BinarySearchFunc(r.buckets, b.bucket, func(s seriesBucket, t int64) int { return cmp.Compare(s.bucket, t) })
	if found {
		mergeBucket(&r.buckets[i].bucketAcc, &b.bucketAcc)
	} else {
		r.buckets = slices.Insert(r.buckets, i, b)
	}
	return runs
}
