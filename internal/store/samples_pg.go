package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
)

// insertPG is insert on PostgreSQL: the rows go by COPY into a temporary
// table of the session, then into samples in one statement that skips
// the ones already stored and returns the keys it added, which marks the
// new rows. A row whose key came earlier in rows is a repeat, as
// SQLite's one-by-one insert finds it: it is not copied.
func (si *sampleInserter) insertPG(ctx context.Context, conn *sql.Conn, rows []sampleRow) error {
	return conn.Raw(func(dc any) error {
		sc, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("insert samples: driver connection %T is not pgx's", dc)
		}
		c := sc.Conn()
		if !si.pgReady {
			// The batch's own: made in its transaction, gone with it.
			if _, err := c.Exec(ctx, `CREATE TEMP TABLE IF NOT EXISTS samples_in (LIKE samples INCLUDING DEFAULTS) ON COMMIT DROP`); err != nil {
				return fmt.Errorf("insert samples: staging table: %w", translate(err))
			}
			si.pgReady = true
		}
		if si.parts == nil {
			si.parts = map[int64]bool{}
		}
		type key struct{ gpu, t int64 }
		first := make(map[key]int, len(rows))
		data := make([][]any, 0, len(rows))
		for i := range rows {
			r := &rows[i]
			r.isNew = false
			k := key{r.vals[colGPU].(int64), r.vals[colT].(int64)}
			if _, dup := first[k]; dup {
				continue
			}
			first[k] = i
			if err := si.ensurePartition(ctx, c, k.t); err != nil {
				return err
			}
			vals := make([]any, nSampleCols)
			for col := range nSampleCols {
				switch {
				case r.set&(1<<col) != 0:
					vals[col] = r.vals[col]
				case col == colJob || col == colRestart || col == colIdle:
					vals[col] = int64(0)
				}
			}
			data = append(data, vals)
		}
		cols := sampleColumns()
		if _, err := c.CopyFrom(ctx, pgx.Identifier{"samples_in"}, cols[:], pgx.CopyFromRows(data)); err != nil {
			return fmt.Errorf("insert samples: copy: %w", translate(err))
		}
		res, err := c.Query(ctx, `INSERT INTO samples SELECT * FROM samples_in ON CONFLICT DO NOTHING RETURNING gpu_id, t_ms`)
		if err != nil {
			return fmt.Errorf("insert samples: %w", translate(err))
		}
		for res.Next() {
			var k key
			if err := res.Scan(&k.gpu, &k.t); err != nil {
				res.Close()
				return fmt.Errorf("insert samples: %w", translate(err))
			}
			if i, ok := first[k]; ok {
				rows[i].isNew = true
			}
		}
		res.Close()
		if err := res.Err(); err != nil {
			return fmt.Errorf("insert samples: %w", translate(err))
		}
		if _, err := c.Exec(ctx, `TRUNCATE samples_in`); err != nil {
			return fmt.Errorf("insert samples: clear staging table: %w", translate(err))
		}
		return nil
	})
}

// ensurePartition makes the month partition of samples that holds t
// (Unix ms), once per batch (samplePartitionSQL): the writer made this
// month's and the next at its start, so this makes only a late or an
// early month's.
func (si *sampleInserter) ensurePartition(ctx context.Context, c *pgx.Conn, tms int64) error {
	m := time.UnixMilli(tms).UTC()
	from := time.Date(m.Year(), m.Month(), 1, 0, 0, 0, 0, time.UTC)
	if si.parts[from.Unix()] {
		return nil
	}
	name, q := samplePartitionSQL(from)
	if _, err := c.Exec(ctx, q); err != nil {
		return fmt.Errorf("insert samples: partition %s: %w", name, translate(err))
	}
	si.parts[from.Unix()] = true
	return nil
}
