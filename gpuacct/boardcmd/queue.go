package boardcmd

import (
	"fmt"
	"io"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/slurmstate"
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
	if v.json {
		return writeJSON(d.Stdout, "status", q)
	}
	return writeQueue(d.Stdout, v, q)
}

func writeQueue(w io.Writer, v *view, q slurmstate.Queue) error {
	t := &table.Table{
		Title: "Pending jobs asking for GPUs at " + v.stamp(q.At),
		Columns: []table.Column{
			{Key: "partition", Title: "PARTITION"}, {Key: "model", Title: "MODEL"}, {Key: "jobs", Title: "JOBS", Kind: table.Int},
			{Key: "gpus", Title: "GPUS", Kind: table.Int}, {Key: "wait", Title: "OLDEST WAIT"}, {Key: "start", Title: "SLURM'S NEXT START"},
		},
	}
	for _, r := range q.Rows {
		wait := "-"
		if !r.Oldest.IsZero() {
			wait = short(q.At.Sub(r.Oldest))
		}
		t.Rows = append(t.Rows, table.Row{Cells: []any{r.Partition, r.Model, int64(r.Jobs), int64(r.GPUs), wait, dash(v.stamp(r.NextStart))}})
	}
	if len(q.Rows) == 0 {
		t.Notes = append(t.Notes, "no pending job asks for GPUs")
	}
	if q.Unread > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("%d more pending jobs not read", q.Unread))
	}
	if err := table.Write(w, t, table.Options{Format: table.Aligned}); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return nil
}
