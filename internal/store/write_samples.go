package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
)

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

// sampleInserter inserts samples through the driver's own prepared
// statements, on the batch's connection and inside its transaction:
// database/sql's per-call argument conversion and locking cost as much as
// SQLite's own insert at a million rows. One statement per set of present
// columns (a GPU's samples nearly always have the same).
type sampleInserter struct {
	stmts map[uint32]driver.Stmt
	args  []driver.NamedValue
	// PostgreSQL's (write_samples_pg.go): the month partitions made in this
	// batch, and each GPU's newest row it sent to COPY.
	parts  map[int64]bool
	copied map[int64]int64
}

func (si *sampleInserter) stmt(ctx context.Context, c driver.ConnPrepareContext, set uint32) (driver.Stmt, error) {
	if st, ok := si.stmts[set]; ok {
		return st, nil
	}
	cols := sampleColumns()
	var names, marks []string
	for i, name := range cols {
		if set&(1<<i) != 0 {
			names = append(names, name)
			marks = append(marks, "?")
		}
	}
	q := "INSERT INTO samples(" + strings.Join(names, ", ") + ") VALUES(" + strings.Join(marks, ", ") + ") ON CONFLICT DO NOTHING"
	st, err := c.PrepareContext(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("prepare sample insert: %w", translate(err))
	}
	if si.stmts == nil {
		si.stmts = map[uint32]driver.Stmt{}
	}
	si.stmts[set] = st
	return st, nil
}

// insert stores rows in order and marks the ones that were new.
func (si *sampleInserter) insert(ctx context.Context, conn *sql.Conn, rows []sampleRow) error {
	// The statements do not watch ctx (the driver would start a goroutine
	// per statement to do so); the caller checks it between segments.
	ctx = context.WithoutCancel(ctx)
	return conn.Raw(func(dc any) error {
		c, ok := dc.(driver.ConnPrepareContext)
		if !ok {
			return errors.New("insert samples: driver connection cannot prepare with a context")
		}
		for i := range rows {
			r := &rows[i]
			st, err := si.stmt(ctx, c, r.set)
			if err != nil {
				return err
			}
			ex, ok := st.(driver.StmtExecContext)
			if !ok {
				return errors.New("insert samples: driver statement cannot execute with a context")
			}
			si.args = si.args[:0]
			for col := range nSampleCols {
				if r.set&(1<<col) != 0 {
					si.args = append(si.args, driver.NamedValue{Ordinal: len(si.args) + 1, Value: r.vals[col]})
				}
			}
			res, err := ex.ExecContext(ctx, si.args)
			if err != nil {
				return fmt.Errorf("insert sample: %w", translate(err))
			}
			n, err := res.RowsAffected()
			if err != nil {
				return fmt.Errorf("insert sample: %w", translate(err))
			}
			r.isNew = n > 0
		}
		return nil
	})
}

// close finalizes the statements.
func (si *sampleInserter) close(conn *sql.Conn) {
	if len(si.stmts) == 0 {
		return
	}
	_ = conn.Raw(func(any) error {
		for _, st := range si.stmts {
			st.Close()
		}
		return nil
	})
	si.stmts = nil
}
