package boardcmd

import (
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/report/table"
)

// FreeCommand is `gpuacct free`.
func FreeCommand(d Deps) *cli.Command {
	cmd := command(d, "free", "free GPUs now, per model and partition, and on which nodes",
		"gpuacct free [--format json] [--no-slurm | --slurm-file FILE] [--live-dir DIR]",
		func(_ *cli.Context, v *view) error {
			if v.json {
				// MIG slices only where there are: the document of a
				// site without MIG is unchanged
				return writeJSON(d.Stdout, "free", struct {
					board.FreeDoc
					MIGSlices []SliceCount `json:"mig_slices,omitempty"`
				}{v.Free(), v.migSlices(nil)})
			}
			return writeFree(d.Stdout, v, i18n.ForEnv(d.Getenv))
		})
	cmd.Action = cliwire.NoArgs(cmd.Action)
	return cmd
}

// writeFree writes the free table in tr's language; the table aligns
// its columns by display width, so Japanese headings line up.
func writeFree(w io.Writer, v *view, tr *i18n.Printer) error {
	b := v.Board
	for _, l := range v.warnings(b.Nodes, tr) {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return fmt.Errorf("free: write: %w", err)
		}
	}
	t := &table.Table{
		Title: tr.T("Free GPUs at %s", v.stamp(tr, b.At)),
		Columns: []table.Column{
			{Key: "model", Title: tr.T("MODEL")},
			{Key: "partition", Title: tr.T("PARTITION")},
			{Key: "free", Title: tr.T("FREE"), Kind: table.Int},
			{Key: "reserved", Title: tr.T("RESERVED"), Kind: table.Int},
			{Key: "nodes", Title: tr.T("NODES")},
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
		t.Notes = append(t.Notes, tr.T("no free GPU"))
	}
	// The total counts each GPU once: the rows count a node in two
	// partitions in both.
	t.Notes = append(t.Notes, tr.T("%d GPU(s) free, %d reserved, %d allocated but idle, %d booked, %d job(s) running, %d node(s) stale",
		b.Totals.FreeGPUs, b.Totals.ReservedGPUs, b.Totals.IdleAllocated, b.Totals.Booked, b.Totals.RunningJobs, b.Totals.StaleNodes))
	if b.Slurm {
		t.Notes = append(t.Notes, tr.T("RESERVED are on nodes of a reservation in force: free to its users only, not counted in FREE"))
	}
	t.Notes = append(t.Notes, freeSlices(v.migSlices(nil), tr)...)
	if err := table.Write(w, t, table.Options{Format: table.Aligned}); err != nil {
		return fmt.Errorf("free: %w", err)
	}
	return nil
}

// freeSlices are free's lines of MIG slices, one per node and profile
// with slices free or reserved: "3 × 1g.10gb free on gpu05". A MIG
// slice is not in the GPU counts above: Slurm counts it as a gres of
// its own.
func freeSlices(sc []SliceCount, tr *i18n.Printer) []string {
	if len(sc) == 0 {
		return nil
	}
	var out, reserved []string
	for _, s := range sc {
		if s.Free > 0 {
			out = append(out, tr.T("%d × %s free on %s", s.Free, s.Profile, s.Node))
		}
		if s.Reserved > 0 {
			reserved = append(reserved, tr.T("%d × %s reserved on %s", s.Reserved, s.Profile, s.Node))
		}
	}
	if len(out) == 0 {
		out = append(out, tr.T("no MIG slice free"))
	}
	return append(out, reserved...)
}
