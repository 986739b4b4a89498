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

// The flags byte of a bucket: which values are present or predicted.
const (
	bfUtilMax   = 1 << iota // util_max not NULL
	bfMemMax                // mem_max not NULL
	bfShareW                // util_share_w_ms differs from util_w_ms: 8 bytes follow
	bfIdleAll               // idle_ms = window_ms
	bfIdleOther             // idle_ms neither 0 nor window_ms: a varint follows
)

// seriesRun is one job run's buckets in a pack, in time order.
type seriesRun struct {
	job, restart int64
	buckets      []seriesBucket
}

// encodeSeriesPack appends the pack of t0 holding runs (sorted by job
// and restart, each with buckets) to dst in seriesPackV1: per run its
// job, restart and byte length (a reader skips other runs' bytes), then
// its buckets (encodeRunBuckets).
func encodeSeriesPack(dst []byte, t0 int64, runs []seriesRun) []byte {
	dst = append(dst, seriesPackV1)
	var body []byte
	for _, r := range runs {
		body = encodeRunBuckets(body[:0], t0, r.buckets)
		dst = binary.AppendVarint(dst, r.job)
		dst = binary.AppendVarint(dst, r.restart)
		dst = binary.AppendUvarint(dst, uint64(len(body)))
		dst = append(dst, body...)
	}
	return dst
}

// eachPackRun calls fn with each run's encoded buckets in the pack data.
func eachPackRun(data []byte, fn func(job, restart int64, body []byte) error) error {
	if len(data) == 0 || data[0] != seriesPackV1 {
		return errSeriesPack
	}
	d := packReader{b: data[1:]}
	for len(d.b) > 0 {
		job, restart, n := d.varint(), d.varint(), d.uvarint()
		if d.bad || n > uint64(len(d.b)) {
			return errSeriesPack
		}
		body := d.b[:n]
		d.b = d.b[n:]
		if err := fn(job, restart, body); err != nil {
			return err
		}
	}
	return nil
}

// decodeSeriesPackAll is every run of the pack of t0 in data.
func decodeSeriesPackAll(t0 int64, data []byte) ([]seriesRun, error) {
	var out []seriesRun
	err := eachPackRun(data, func(job, restart int64, body []byte) error {
		r := seriesRun{job: job, restart: restart}
		err := decodeRunBuckets(t0, body, func(b *seriesBucket) error {
			r.buckets = append(r.buckets, *b)
			return nil
		})
		out = append(out, r)
		return err
	})
	return out, err
}

// decodePackRun calls fn for the buckets of run (job, restart) in the
// pack of t0 in data, in time order.
func decodePackRun(t0 int64, data []byte, job, restart int64, fn func(b *seriesBucket) error) error {
	return eachPackRun(data, func(j, r int64, body []byte) error {
		if j != job || r != restart {
			return nil
		}
		return decodeRunBuckets(t0, body, fn)
	})
}

// encodeRunBuckets appends one run's buckets (in time order, all in the
// pack of t0) to dst. Each value is a varint of its difference from what
// the bucket's other values or the bucket before predict, so that a
// steady job's bucket takes 20 to 30 bytes where a row took 80: the
// first sample comes at the same offset as the bucket before's, end −
// first is a bucket's span, window, utilization and power cover the
// span, power stays near the mean before, energy is power × time,
// memory peaks repeat.
func encodeRunBuckets(dst []byte, t0 int64, buckets []seriesBucket) []byte {
	next := t0
	var prevPowerW, prevPowerMs, prevMem, prevPhase int64
	for i := range buckets {
		b := &buckets[i]
		dst = binary.AppendUvarint(dst, uint64((b.bucket-next)/BucketMs))
		next = b.bucket + BucketMs
		var f byte
		if b.haveU {
			f |= bfUtilMax
		}
		if b.haveM {
			f |= bfMemMax
		}
		shareBits := math.Float64bits(b.utilShareW)
		if shareBits != math.Float64bits(float64(b.utilW)) {
			f |= bfShareW
		}
		switch b.idle {
		case 0:
		case b.window:
			f |= bfIdleAll
		default:
			f |= bfIdleOther
		}
		dst = append(dst, f)
		dst = binary.AppendVarint(dst, b.n)
		dst = binary.AppendVarint(dst, b.first-b.bucket-prevPhase)
		prevPhase = b.first - b.bucket
		dst = binary.AppendVarint(dst, b.end-b.first-BucketMs)
		dst = binary.AppendVarint(dst, b.window-(b.end-b.first))
		if f&bfIdleOther != 0 {
			dst = binary.AppendVarint(dst, b.idle)
		}
		dst = binary.AppendVarint(dst, b.window-b.utilMs)
		dst = binary.AppendVarint(dst, b.utilW)
		if f&bfShareW != 0 {
			dst = binary.LittleEndian.AppendUint64(dst, shareBits)
		}
		dst = binary.AppendVarint(dst, b.window-b.powerMs)
		dst = binary.AppendVarint(dst, b.powerW-predictPower(prevPowerW, prevPowerMs, b.powerMs))
		prevPowerW, prevPowerMs = b.powerW, b.powerMs
		if b.haveU {
			dst = binary.AppendVarint(dst, b.utilMax)
		}
		if b.haveM {
			dst = binary.AppendVarint(dst, b.memMax-prevMem)
			prevMem = b.memMax
		}
		dst = binary.AppendVarint(dst, b.n-b.energyN)
		dst = binary.AppendVarint(dst, b.energy-predictEnergy(b.energyN, b.powerW))
	}
	return dst
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

// decodeRunBuckets calls fn for each bucket of one run's bytes in the
// pack of t0, in time order; fn's error stops it.
func decodeRunBuckets(t0 int64, data []byte, fn func(b *seriesBucket) error) error {
	d := packReader{b: data}
	next := t0
	var prevPowerW, prevPowerMs, prevMem, prevPhase int64
	var b seriesBucket
	for len(d.b) > 0 {
		b = seriesBucket{}
		b.bucket = next + int64(d.uvarint())*BucketMs
		next = b.bucket + BucketMs
		f := d.byte()
		b.haveU, b.haveM = f&bfUtilMax != 0, f&bfMemMax != 0
		b.n = d.varint()
		b.first = b.bucket + prevPhase + d.varint()
		prevPhase = b.first - b.bucket
		b.end = b.first + BucketMs + d.varint()
		b.window = b.end - b.first + d.varint()
		switch {
		case f&bfIdleAll != 0:
			b.idle = b.window
		case f&bfIdleOther != 0:
			b.idle = d.varint()
		}
		b.utilMs = b.window - d.varint()
		b.utilW = d.varint()
		b.utilShareW = float64(b.utilW)
		if f&bfShareW != 0 {
			b.utilShareW = math.Float64frombits(d.uint64())
		}
		b.powerMs = b.window - d.varint()
		b.powerW = predictPower(prevPowerW, prevPowerMs, b.powerMs) + d.varint()
		prevPowerW, prevPowerMs = b.powerW, b.powerMs
		if b.haveU {
			b.utilMax = d.varint()
		}
		if b.haveM {
			b.memMax = prevMem + d.varint()
			prevMem = b.memMax
		}
		b.energyN = b.n - d.varint()
		b.energy = predictEnergy(b.energyN, b.powerW) + d.varint()
		if d.bad {
			return errSeriesPack
		}
		if err := fn(&b); err != nil {
			return err
		}
	}
	return nil
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

func (r *packReader) byte() byte {
	if len(r.b) < 1 {
		r.bad = true
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
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
