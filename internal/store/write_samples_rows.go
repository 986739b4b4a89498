package store

import (
	"context"
	"fmt"
	"math"
	"strings"
)

// Fixtures written as rows: tests (and their fixture packages) that set
// up samples by SQL write them into a samples table of the layout before
// migration 0021, which PackRowSamples then packs as the migration does.

// RowSamplesSQL makes a table samples of the row-per-sample layout the
// ledger had before migration 0021, on engine.
func RowSamplesSQL(engine string) string {
	q := `CREATE TABLE samples (
    gpu_id INTEGER NOT NULL, t_ms INTEGER NOT NULL, interval_ms INTEGER NOT NULL,
    job INTEGER NOT NULL DEFAULT 0, restart INTEGER NOT NULL DEFAULT 0, jobs TEXT, idle INTEGER NOT NULL DEFAULT 0,
    util INTEGER, mem_util INTEGER, mem_used_mib INTEGER, power_mw INTEGER, energy_mj INTEGER, energy_delta_mj INTEGER,
    temp_c INTEGER, sm_clock_mhz INTEGER, throttle INTEGER, ecc_errors INTEGER, xid_errors INTEGER, procs INTEGER,
    foreign_procs INTEGER, missing TEXT, metrics TEXT,
    PRIMARY KEY (gpu_id, t_ms))`
	if engine == EnginePostgres {
		// The types of the table migration 0021 packed: a statement the
		// writer cached reads this one alike.
		return strings.NewReplacer("INTEGER", "BIGINT", "TEXT", `TEXT COLLATE "C"`).Replace(q)
	}
	return q
}

// PackRowSamples packs the rows of a samples table made by RowSamplesSQL
// into the ledger's packs, which must hold none of their GPUs' spans yet,
// and drops the table.
func (s *Ledger) PackRowSamples(ctx context.Context) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("pack row samples: %w", translate(err))
	}
	defer tx.Rollback()
	if err := packSamplesStep(ctx, tx); err != nil {
		return fmt.Errorf("pack row samples: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("pack row samples: %w", translate(err))
	}
	return nil
}

// SampleColumns are the columns of StoredSamples' rows: the samples
// table's of before migration 0021.
func SampleColumns() []string {
	cols := sampleColumns()
	return cols[:]
}

// StoredSamples calls fn with every stored sample, by GPU and time, as the
// samples table held it: values in SampleColumns' order, nil for NULL,
// and job, restart and idle 0 when absent. For tests and benchmarks: it
// reads every GPU's samples. vals is reused.
func (s *Ledger) StoredSamples(ctx context.Context, fn func(vals []any) error) error {
	rows, err := s.db.QueryContext(ctx, `SELECT DISTINCT gpu_id FROM sample_packs ORDER BY gpu_id`)
	gids, err := collect(rows, err, func(r batchRows, id *int64) error { return r.Scan(id) })
	if err != nil {
		return fmt.Errorf("list sampled gpus: %w", translate(err))
	}
	vals := make([]any, nSampleCols)
	for _, gid := range gids {
		err := s.eachSample(ctx, gid, math.MinInt64, math.MaxInt64, func(r *sampleRow) error {
			for col := range nSampleCols {
				vals[col] = r.value(col)
			}
			return fn(vals)
		})
		if err != nil {
			return err
		}
	}
	return nil
}
