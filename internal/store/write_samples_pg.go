package store

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// insertPG is insert on PostgreSQL. A row is new unless its key is
// stored already or came earlier in rows (a repeat, as SQLite's
// one-by-one insert finds it). Which keys are stored is asked by one
// query (the writer lock keeps anyone else from adding any meanwhile),
// unless the batch knows every row to be newer than its GPU's newest
// stored sample (newest: the agent ships in order, so nearly always),
// and then nothing is asked. New rows wait in pipe for one COPY of many
// segments' rows, straight into samples. (A staging table moved by
// INSERT … ON CONFLICT DO NOTHING RETURNING cost the server three times
// the COPY, and a round trip more per call.)
func (si *sampleInserter) insertPG(ctx context.Context, conn *sql.Conn, pipe *pipeline, rows []sampleRow, newest func(gid int64) (t int64, known bool)) error {
	if pipe.err != nil {
		return pipe.err
	}
	if si.parts == nil {
		si.parts, si.copied = map[int64]bool{}, map[int64]int64{}
	}
	type key struct{ gpu, t int64 }
	first := make(map[key]int, len(rows))
	oldest := map[int64]int64{} // each GPU's oldest row
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for i := range rows {
		r := &rows[i]
		r.isNew = false
		k := key{r.vals[colGPU].(int64), r.vals[colT].(int64)}
		if _, dup := first[k]; dup {
			continue
		}
		first[k] = i
		if t, ok := oldest[k.gpu]; !ok || k.t < t {
			oldest[k.gpu] = k.t
		}
		lo, hi = min(lo, k.t), max(hi, k.t)
	}
	if len(first) == 0 {
		return nil
	}
	ask := false
	for gid, t := range oldest {
		n, known := newest(gid)
		if c, ok := si.copied[gid]; ok {
			n = max(n, c)
		}
		if !known || t <= n {
			ask = true
		}
	}
	if ask {
		// A read of samples: the rows waiting for COPY go before it
		// (pipeline.query), so that it finds them stored too.
		stored, err := pipe.query(ctx, `SELECT gpu_id, t_ms FROM samples WHERE gpu_id = ANY($1) AND t_ms BETWEEN $2 AND $3`,
			[]any{slices.Collect(maps.Keys(oldest)), lo, hi})
		if err != nil {
			return fmt.Errorf("insert samples: stored keys: %w", err)
		}
		for stored.Next() {
			var k key
			if err := stored.Scan(&k.gpu, &k.t); err != nil {
				return fmt.Errorf("insert samples: stored keys: %w", err)
			}
			delete(first, k)
		}
	}
	var data [][]any
	err := withPgx(conn, func(c *pgx.Conn) error {
		data = make([][]any, 0, len(first))
		for i := range rows {
			r := &rows[i]
			k := key{r.vals[colGPU].(int64), r.vals[colT].(int64)}
			if j, ok := first[k]; !ok || j != i {
				continue
			}
			if err := si.ensurePartition(ctx, c, pipe, k.t); err != nil {
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
			r.isNew = true
			if t, ok := si.copied[k.gpu]; !ok || k.t > t {
				si.copied[k.gpu] = k.t
			}
		}
		return nil
	})
	if err != nil || len(data) == 0 {
		return err
	}
	return pipe.copyRows(ctx, data)
}

// ensurePartition makes the month partition of samples that holds t
// (Unix ms), once per batch (samplePartitionSQL): the writer made this
// month's and the next at its start, so this makes only a late or an
// early month's. pipe, when there is one, is the batch's: its writes out
// are read first.
func (si *sampleInserter) ensurePartition(ctx context.Context, c *pgx.Conn, pipe *pipeline, tms int64) error {
	m := time.UnixMilli(tms).UTC()
	from := time.Date(m.Year(), m.Month(), 1, 0, 0, 0, 0, time.UTC)
	if si.parts[from.Unix()] {
		return nil
	}
	// A statement of its own: the connection leaves pipeline mode.
	if err := pipe.end(); err != nil {
		pipe.err = err // pipe is not nil: end of nil is nil
		return err
	}
	name, q := samplePartitionSQL(from)
	if _, err := c.Exec(ctx, q); err != nil {
		err = fmt.Errorf("insert samples: partition %s: %w", name, translate(err))
		if pipe != nil {
			pipe.err = err // the server has failed the transaction
		}
		return err
	}
	si.parts[from.Unix()] = true
	return nil
}
