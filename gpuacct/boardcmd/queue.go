package boardcmd

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
)

func queueFlag() cli.Flag {
	return &cli.BoolFlag{Name: "queue", Usage: "instead of the GPUs, the pending jobs that ask for GPUs per partition and model: count, oldest wait, Slurm's estimated start (squeue)"}
}

// showQueue is status --queue: what waits for GPUs, asked of Slurm
// within the board's Slurm timeout.
func showQueue(c *cli.Context, d Deps, v *view) error {
	if c.Bool("no-slurm") || v.slurmFile != "" {
		return cliwire.Usagef("status: --queue asks Slurm's squeue; it goes with neither --no-slurm nor a Slurm file")
	}
	q, err := d.Queue(c.Context, v.slurmTimeout)
	if err != nil {
		return fmt.Errorf("status: %w", err)
	}
	// Without a ledger (store.path, --db) the queue is Slurm's alone.
	var waitsErr error
	if d.Waits != nil && v.store != "" {
		q.Waits, waitsErr = d.Waits(c.Context, v.store, v.storeBusy, q.At)
	}
	if v.json {
		return writeJSON(d.Stdout, "status", q)
	}
	return writeQueue(d.Stdout, v, q, waitsErr, i18n.ForEnv(d.Getenv))
}

// LedgerWaits reads the median waits from submit to start, per GPU model
// and count, of the runs that started over slurmstate.WaitWindow
// before now, from the ledger at loc (readLedger).
func LedgerWaits(ctx context.Context, loc string, busy time.Duration, now time.Time) ([]slurmstate.Wait, error) {
	var ws []store.Wait
	err := readLedger(ctx, loc, busy, func(ctx context.Context, st *store.Ledger) (err error) {
		ws, _, err = st.Waits(ctx, now.Add(-slurmstate.WaitWindow), now)
		return err
	})
	if err != nil {
		return nil, err
	}
	return report.QueueWaits(ws), nil
}

// writeQueue writes the queue's tables in tr's language.
func writeQueue(w io.Writer, v *view, q slurmstate.Queue, waitsErr error, tr *i18n.Printer) error {
	t := &table.Table{
		Title: tr.T("Pending jobs asking for GPUs at %s", v.stamp(tr, q.At)),
		Columns: []table.Column{
			{Key: "partition", Title: tr.T("PARTITION")}, {Key: "model", Title: tr.T("MODEL")}, {Key: "jobs", Title: tr.T("JOBS"), Kind: table.Int},
			{Key: "gpus", Title: tr.T("GPUS"), Kind: table.Int}, {Key: "wait", Title: tr.T("OLDEST WAIT")}, {Key: "start", Title: tr.T("SLURM'S NEXT START")},
		},
	}
	for _, r := range q.Rows {
		wait := "-"
		if !r.Oldest.IsZero() {
			wait = short(q.At.Sub(r.Oldest))
		}
		t.Rows = append(t.Rows, table.Row{Cells: []any{r.Partition, r.Model, int64(r.Jobs), int64(r.GPUs), wait, dash(v.stamp(tr, r.NextStart))}})
	}
	if len(q.Rows) == 0 {
		t.Notes = append(t.Notes, tr.T("no pending job asks for GPUs"))
	}
	if q.Unread > 0 {
		t.Notes = append(t.Notes, tr.T("%d more pending jobs not read", q.Unread))
	}
	if waitsErr != nil {
		t.Notes = append(t.Notes, tr.T("median waits not read: %s", waitsErr.Error()))
	}
	if err := table.Write(w, t, table.Options{Format: table.Aligned}); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if len(q.Waits) == 0 {
		return nil
	}
	s := &table.Table{
		Title: tr.T("Started within (median wait from submit, last 7 days)"),
		Columns: []table.Column{
			{Key: "model", Title: tr.T("MODEL")}, {Key: "gpus", Title: tr.T("GPUS ASKED"), Kind: table.Int}, {Key: "jobs", Title: tr.T("JOBS"), Kind: table.Int},
			{Key: "wait", Title: tr.T("STARTED WITHIN")},
		},
	}
	for _, r := range q.Waits {
		s.Rows = append(s.Rows, table.Row{Cells: []any{r.Model, r.GPUs, int64(r.Jobs), short(time.Duration(r.MedianS) * time.Second)}})
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	if err := table.Write(w, s, table.Options{Format: table.Aligned}); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return nil
}
