package store

// Columns of the samples table in the order sampleRow holds them.
const (
	colGPU = iota
	colT
	colInterval
	colJob
	colRestart
	colJobs
	colIdle
	colUtil
	colMemUtil
	colMemUsed
	colPower
	colEnergy
	colEnergyDelta
	colTemp
	colSMClock
	colThrottle
	colECC
	colXID
	colProcs
	colForeign
	colMissing
	colMetrics
	nSampleCols
)

func sampleColumns() [nSampleCols]string {
	return [nSampleCols]string{"gpu_id", "t_ms", "interval_ms", "job", "restart", "jobs", "idle", "util", "mem_util",
		"mem_used_mib", "power_mw", "energy_mj", "energy_delta_mj", "temp_c", "sm_clock_mhz", "throttle", "ecc_errors",
		"xid_errors", "procs", "foreign_procs", "missing", "metrics"}
}

// sampleRow is one samples row to insert. A column whose bit is not in
// set is left out of the INSERT: NULL, or the column's default 0 for job,
// restart and idle, exactly what binding NULL or 0 would store. Values
// are held typed, not as driver.Value: the readers decode millions of
// samples a board fill (issue 35), and boxing each integer was most of
// its cost; value boxes only for the callers that want an any.
type sampleRow struct {
	set uint32
	// ints holds the integer columns by column number (a text column's
	// slot is unused), texts the text columns by textSlot.
	ints  [nSampleCols]int64
	texts [3]string
	// isNew is filled in by the insert: false when the row was there.
	isNew bool
}

// textSlot is text column col's index in sampleRow.texts, -1 for the
// integer columns.
func textSlot(col int) int {
	switch col {
	case colJobs:
		return 0
	case colMissing:
		return 1
	case colMetrics:
		return 2
	}
	return -1
}

// put sets integer column col.
func (r *sampleRow) put(col int, v int64) {
	r.ints[col] = v
	r.set |= 1 << col
}

// putText sets text column col.
func (r *sampleRow) putText(col int, s string) {
	r.texts[textSlot(col)] = s
	r.set |= 1 << col
}

// drop makes column col absent.
func (r *sampleRow) drop(col int) {
	r.set &^= 1 << col
	r.ints[col] = 0
	if i := textSlot(col); i >= 0 {
		r.texts[i] = ""
	}
}

// has says column col is present.
func (r *sampleRow) has(col int) bool { return r.set&(1<<col) != 0 }

// num is integer column col and whether it is present (0 when not).
func (r *sampleRow) num(col int) (int64, bool) {
	if r.set&(1<<col) == 0 {
		return 0, false
	}
	return r.ints[col], true
}

// text is text column col and whether it is present.
func (r *sampleRow) text(col int) (string, bool) {
	if r.set&(1<<col) == 0 {
		return "", false
	}
	return r.texts[textSlot(col)], true
}

// value is column col as the samples table held it: nil for NULL, and
// the default 0 for job, restart and idle when absent; int64 or string.
func (r *sampleRow) value(col int) any {
	switch {
	case r.set&(1<<col) != 0:
		if i := textSlot(col); i >= 0 {
			return r.texts[i]
		}
		return r.ints[col]
	case col == colJob || col == colRestart || col == colIdle:
		return int64(0)
	}
	return nil
}

// sampleInserter stores samples in their packs (insertPacks).
type sampleInserter struct {
	// PostgreSQL's: the month partitions made in this batch.
	parts map[int64]bool
	// last is each GPU's pack this batch wrote last, as stored: a GPU's
	// next segment mostly goes into the same pack, which then need not
	// be read back. One pack a GPU bounds it.
	last map[int64]storedPack
}

// storedPack is a sample_packs row of a GPU as the batch wrote it.
type storedPack struct {
	t0, n, t1 int64
	data      []byte
}
