package boardcmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/report/table"
)

// FreeCommand is `gpuacct free`.
func FreeCommand(d Deps) *cli.Command {
	cmd := command(d, "free", "free GPUs now, per model and partition, and on which nodes",
		"gpuacct free [--format json] [--no-slurm | --slurm-file FILE] [--live-dir DIR]",
		func(_ *cli.Context, v *view) error {
			if v.json {
				return writeJSON(d.Stdout, "free", v.Free())
			}
			return writeFree(d.Stdout, v)
		})
	cmd.Action = cliwire.NoArgs(cmd.Action)
	return cmd
}

func writeFree(w io.Writer, v *view) error {
	b := v.Board
	for _, l := range v.warnings(b.Nodes) {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return fmt.Errorf("free: write: %w", err)
		}
	}
	t := &table.Table{
		Title: "Free GPUs at " + v.stamp(b.At),
		Columns: []table.Column{
			{Key: "model", Title: "MODEL"},
			{Key: "partition", Title: "PARTITION"},
			{Key: "free", Title: "FREE", Kind: table.Int},
			{Key: "reserved", Title: "RESERVED", Kind: table.Int},
			{Key: "nodes", Title: "NODES"},
		},
	}
	for _, f := range b.Totals.Free {
		var nodes []string
		for _, n := range f.Nodes {
			nodes = append(nodes, n.String())
		}
		t.Rows = append(t.Rows, table.Row{Cells: []any{f.Model, dash(f.Partition), int64(f.Free), int64(f.Reserved), strings.Join(nodes, ",")}})
	}
	if len(t.Rows) == 0 {
		t.Notes = append(t.Notes, "no free GPU")
	}
	// The total counts each GPU once: the rows count a node in two
	// partitions in both.
	t.Notes = append(t.Notes, fmt.Sprintf("%d GPU(s) free, %d reserved, %d allocated but idle, %d booked, %d job(s) running, %d node(s) stale",
		b.Totals.FreeGPUs, b.Totals.ReservedGPUs, b.Totals.IdleAllocated, b.Totals.Booked, b.Totals.RunningJobs, b.Totals.StaleNodes))
	if b.Slurm {
		t.Notes = append(t.Notes, "RESERVED are on nodes of a reservation in force: free to its users only, not counted in FREE")
	}
	if err := table.Write(w, t, table.Options{Format: table.Aligned}); err != nil {
		return fmt.Errorf("free: %w", err)
	}
	return nil
}
