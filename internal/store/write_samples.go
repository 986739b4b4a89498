package store

import "database/sql/driver"

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
// restart and idle, exactly what binding NULL or 0 would store.
type sampleRow struct {
	set  uint32
	vals [nSampleCols]driver.Value
	// isNew is filled in by the insert: false when the row was there.
	isNew bool
}

func (r *sampleRow) put(col int, v driver.Value) {
	r.vals[col] = v
	r.set |= 1 << col
}

// value is column col as the samples table held it: nil for NULL, and
// the default 0 for job, restart and idle when absent.
func (r *sampleRow) value(col int) any {
	switch {
	case r.set&(1<<col) != 0:
		return r.vals[col]
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
