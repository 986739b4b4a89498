package store

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The packed sample encoding: a run of one GPU's samples in time order as
// one byte string, for a ledger that stores a GPU's few minutes in one
// row instead of a row a sample (issue 35: a row costs 60 bytes in
// SQLite, 23 of them the record header; packed, 5 minutes of the
// simulated day cost 7 bytes a sample). The ledger's layout since
// migration 0021 (sample_packs, write_samples_packs.go).
//
// Each sample is written against the one before it in the run:
//
//	uvarint  zigzag(t_ms − previous t_ms − previous interval_ms)
//	uvarint  changed<<1 | present changed: the integer columns whose value
//	         is not the predicted one (bit i: packInts[i])
//	uvarint  present (bit i: sample column i), only when it changed
//	varint   per changed column: value − predicted (zigzag, wrapping)
//	text     per present text column: uvarint length, bytes
//
// A column's prediction is its value in the previous sample (0 for the
// first); energy_mj's is the previous counter plus this sample's
// energy_delta_mj when both are there, so a steady counter costs nothing.

// packInts are the integer columns in the order of the changed bits: the
// ones that change every sample first, so that their bits fit one byte.
func packInts() [nPackInts]int {
	return [nPackInts]int{colUtil, colMemUtil, colMemUsed, colPower, colEnergyDelta, colTemp, colSMClock, colEnergy,
		colInterval, colJob, colRestart, colIdle, colThrottle, colECC, colXID, colProcs, colForeign}
}

const nPackInts = 17

// packTexts are the text columns, written whole when present.
func packTexts() [3]int { return [3]int{colJobs, colMissing, colMetrics} }

// maxPackSamples bounds a run decoded from one packed value, so that a
// corrupt or hostile value cannot make the reader allocate without end.
const maxPackSamples = 1 << 16

// packState is what the next sample of a run is written against.
type packState struct {
	n       int
	t       int64
	ints    [nSampleCols]int64
	present uint32
}

// predict is column col's predicted value for r (see the encoding).
func (p *packState) predict(col int, r *sampleRow) int64 {
	if col == colEnergy && p.n > 0 && p.present&(1<<colEnergy) != 0 && r.set&(1<<colEnergyDelta) != 0 {
		return p.ints[colEnergy] + r.ints[colEnergyDelta]
	}
	return p.ints[col]
}

// packColumns are the sample columns a pack holds: every one but the GPU,
// which is the packed row's key.
const packColumns = uint32(1<<nSampleCols-1) &^ (1 << colGPU)

// appendPacked appends sample r, the next of the run p was written
// with, to dst. r must hold t_ms.
func appendPacked(dst []byte, p *packState, r *sampleRow) ([]byte, error) {
	t, ok := r.num(colT)
	if !ok {
		return dst, errors.New("pack sample: no time")
	}
	present := r.set & packColumns
	var changed uint64
	var ints [nPackInts]int64
	for i, col := range packInts() {
		if present&(1<<col) == 0 {
			continue
		}
		v := r.ints[col]
		ints[i] = v
		if v != p.predict(col, r) {
			changed |= 1 << i
		}
	}
	head := changed << 1
	if present != p.present || p.n == 0 {
		head |= 1
	}
	dst = binary.AppendVarint(dst, t-p.t-p.ints[colInterval])
	dst = binary.AppendUvarint(dst, head)
	if head&1 != 0 {
		dst = binary.AppendUvarint(dst, uint64(present))
	}
	for i, col := range packInts() {
		if changed&(1<<i) != 0 {
			dst = binary.AppendVarint(dst, ints[i]-p.predict(col, r))
		}
	}
	for _, col := range packTexts() {
		if present&(1<<col) == 0 {
			continue
		}
		s := r.texts[textSlot(col)]
		dst = binary.AppendUvarint(dst, uint64(len(s)))
		dst = append(dst, s...)
	}
	// The state moves only once the sample is written: predict reads the
	// previous counter.
	for i, col := range packInts() {
		if present&(1<<col) != 0 {
			p.ints[col] = ints[i]
		}
	}
	p.t, p.present = t, present
	p.n++
	return dst, nil
}

// eachPacked calls fn with each sample of a packed run of GPU gid, in
// order; fn must not keep r past its call. At most maxPackSamples.
func eachPacked(data []byte, gid int64, fn func(r *sampleRow) error) error {
	var p packState
	var r sampleRow
	bad := func(what string) error {
		return fmt.Errorf("packed samples of gpu %d: sample %d: %s", gid, p.n+1, what)
	}
	for len(data) > 0 {
		if p.n == maxPackSamples {
			return bad(fmt.Sprintf("more than %d samples", maxPackSamples))
		}
		dt, k := binary.Varint(data)
		if k <= 0 {
			return bad("bad time")
		}
		data = data[k:]
		head, k := binary.Uvarint(data)
		if k <= 0 || head>>(nPackInts+1) != 0 {
			return bad("bad head")
		}
		data = data[k:]
		present := p.present
		if head&1 != 0 {
			v, k := binary.Uvarint(data)
			if k <= 0 || uint32(v)&^packColumns != 0 || v>>nSampleCols != 0 {
				return bad("bad column set")
			}
			present, data = uint32(v), data[k:]
		} else if p.n == 0 {
			return bad("no column set")
		}
		r = sampleRow{set: present | 1<<colGPU}
		r.ints[colGPU] = gid
		t := p.t + p.ints[colInterval] + dt
		r.ints[colT] = t
		changed := head >> 1
		// energy_delta_mj comes before energy_mj in packInts, so the
		// counter's prediction can read this sample's delta.
		for i, col := range packInts() {
			if present&(1<<col) == 0 {
				if changed&(1<<i) != 0 {
					return bad("a changed column that is absent")
				}
				continue
			}
			v := p.predict(col, &r)
			if changed&(1<<i) != 0 {
				d, k := binary.Varint(data)
				if k <= 0 {
					return bad("bad value")
				}
				v, data = v+d, data[k:]
			}
			r.ints[col] = v
		}
		for _, col := range packTexts() {
			if present&(1<<col) == 0 {
				continue
			}
			n, k := binary.Uvarint(data)
			if k <= 0 || n > uint64(len(data)-k) {
				return bad("bad text")
			}
			r.texts[textSlot(col)] = string(data[k : k+int(n)])
			data = data[k+int(n):]
		}
		for _, col := range packInts() {
			if present&(1<<col) != 0 {
				p.ints[col] = r.ints[col]
			}
		}
		p.t, p.present = t, present
		p.n++
		if err := fn(&r); err != nil {
			return err
		}
	}
	return nil
}
