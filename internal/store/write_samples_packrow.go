package store

import (
	"database/sql"
	"fmt"
	"slices"
	"strings"
)

// Packed rows: the ledger layout the packed encoding is for (issue 35),
// one row per GPU and samplePackMs holding that span's samples as one
// packed run. What is here is the layout's arithmetic, shared by the
// writer, the conversion of a row-per-sample ledger and its measurement:
// which row a sample goes to, how a batch's samples merge into a stored
// row without counting one twice, and how a span is read back.

// samplePackMs is the time a packed row spans, aligned on the UTC clock
// as the series buckets are: 30 samples at 10 s, a few hundred bytes, so
// a row stays inside SQLite's page (no overflow page) and a read of a
// short window decodes at most one span too many at each end.
const samplePackMs = 5 * 60 * 1000

// packStart is the start of the packed row that holds a sample at t.
func packStart(t int64) int64 {
	s := t - t%samplePackMs
	if t%samplePackMs < 0 {
		s -= samplePackMs
	}
	return s
}

// mergePack merges rows, samples of GPU gid in any order, into old, a
// packed run of the same GPU, and packs the result in time order. A row
// whose time old or an earlier row already holds is left out, as the
// samples table's insert-or-ignore does, so that a record applied twice
// stores nothing twice; added[i] tells whether rows[i] went in. The bytes
// depend only on the samples, never on the order they came in, so a
// ledger and its copy hold the same packs.
func mergePack(old []byte, gid int64, rows []sampleRow) (data []byte, added []bool, err error) {
	var all []sampleRow
	if err := eachPacked(old, gid, func(r *sampleRow) error {
		all = append(all, *r)
		return nil
	}); err != nil {
		return nil, nil, err
	}
	have := make(map[int64]bool, len(all)+len(rows))
	for i := range all {
		have[all[i].ints[colT]] = true
	}
	added = make([]bool, len(rows))
	for i := range rows {
		r := &rows[i]
		if g, ok := r.num(colGPU); !ok || g != gid {
			return nil, nil, fmt.Errorf("pack samples of gpu %d: a sample of gpu %v", gid, r.value(colGPU))
		}
		t, ok := r.num(colT)
		if !ok || r.set&(1<<colT) == 0 {
			return nil, nil, fmt.Errorf("pack samples of gpu %d: a sample without a time", gid)
		}
		if have[t] {
			continue
		}
		have[t] = true
		added[i] = true
		all = append(all, *r)
	}
	if len(all) > maxPackSamples {
		return nil, nil, fmt.Errorf("pack samples of gpu %d: %d samples, at most %d a pack", gid, len(all), maxPackSamples)
	}
	slices.SortStableFunc(all, func(a, b sampleRow) int {
		ta, tb := a.ints[colT], b.ints[colT]
		switch {
		case ta < tb:
			return -1
		case ta > tb:
			return 1
		}
		return 0
	})
	var p packState
	for i := range all {
		if data, err = appendPacked(data, &p, &all[i]); err != nil {
			return nil, nil, err
		}
	}
	return data, added, nil
}

// eachPackedIn calls fn with each sample of a packed run of GPU gid whose
// time is in [from, to), in order: a range read over the packed rows that
// cover it.
func eachPackedIn(data []byte, gid, from, to int64, fn func(r *sampleRow) error) error {
	return eachPacked(data, gid, func(r *sampleRow) error {
		t := r.ints[colT]
		if t < from || t >= to {
			return nil
		}
		return fn(r)
	})
}

// packer packs a stream of samples sorted by GPU and time, as a
// conversion reads them from a row-per-sample table, one packed row at a
// time: memory stays one span's samples whatever the ledger's size.
type packer struct {
	gid, start int64
	p          packState
	data       []byte
	n          int
	// emit takes each finished row; data is the packer's, copied if kept.
	emit func(gid, start int64, data []byte, n int) error
}

// add appends r, which must not come before the previous sample of its
// GPU.
func (k *packer) add(r *sampleRow) error {
	gid, _ := r.num(colGPU)
	t, ok := r.num(colT)
	if !ok {
		return fmt.Errorf("pack samples of gpu %d: a sample without a time", gid)
	}
	start := packStart(t)
	if k.n > 0 && (gid != k.gid || start != k.start) {
		if gid < k.gid || gid == k.gid && start < k.start {
			return fmt.Errorf("pack samples: gpu %d at %d comes after gpu %d at %d", gid, t, k.gid, k.start)
		}
		if err := k.flush(); err != nil {
			return err
		}
	}
	if k.n > 0 && t <= k.p.t {
		return fmt.Errorf("pack samples of gpu %d: %d comes after %d", gid, t, k.p.t)
	}
	k.gid, k.start = gid, start
	var err error
	k.data, err = appendPacked(k.data, &k.p, r)
	if err != nil {
		return err
	}
	k.n++
	return nil
}

// flush emits the row being packed, if any.
func (k *packer) flush() error {
	if k.n == 0 {
		return nil
	}
	err := k.emit(k.gid, k.start, k.data, k.n)
	k.p, k.data, k.n = packState{}, k.data[:0], 0
	return err
}

// rowSampleCols are the samples table's columns in sampleRow's order, for
// scanSampleRow.
func rowSampleCols() string {
	cols := sampleColumns()
	return strings.Join(cols[:], ", ")
}

// scanSampleRow reads a samples row selected as rowSampleCols into r, as
// the segment writer would have filled it: NULL columns absent, integers
// int64, text string.
func scanSampleRow(sc interface{ Scan(...any) error }, r *sampleRow) error {
	var ints [nSampleCols]sql.NullInt64
	var texts [nSampleCols]sql.NullString
	dst := make([]any, nSampleCols)
	for col := range nSampleCols {
		switch col {
		case colJobs, colMissing, colMetrics:
			dst[col] = &texts[col]
		default:
			dst[col] = &ints[col]
		}
	}
	if err := sc.Scan(dst...); err != nil {
		return err
	}
	*r = sampleRow{}
	for col := range nSampleCols {
		switch col {
		case colJobs, colMissing, colMetrics:
			if texts[col].Valid {
				r.putText(col, texts[col].String)
			}
		default:
			if ints[col].Valid {
				r.put(col, ints[col].Int64)
			}
		}
	}
	return nil
}
