package boardcmd

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report/table"
)

// maxProcsShown bounds the processes one cell of the table lists.
const maxProcsShown = 4

// StatusCommand is `gpuacct status [NODE...]`.
func StatusCommand(d Deps) *cli.Command {
	cmd := command(d, "status", "each GPU now: state, job, user, utilization, memory and processes",
		"gpuacct status [NODE...] [--format json] [--no-slurm | --slurm-file FILE] [--live-dir DIR]",
		func(c *cli.Context, v *view) error {
			if c.Bool("queue") {
				return showQueue(c, d, v)
			}
			nodes := v.Board.Nodes
			if c.Args().Len() > 0 {
				nodes = nil
				for _, name := range c.Args().Slice() {
					n, err := v.Board.Find(name)
					if err != nil {
						return cliwire.Usagef("status: %v (see 'gpuacct status' for all nodes)", err)
					}
					nodes = append(nodes, *n)
				}
			}
			if v.json {
				// MIG slices only where there are, as in free
				return writeJSON(d.Stdout, "status", struct {
					board.StatusDoc
					MIGSlices []SliceCount `json:"mig_slices,omitempty"`
				}{v.Status(nodes), v.migSlices(nodes)})
			}
			return writeStatus(d.Stdout, v, nodes, i18n.ForEnv(d.Getenv))
		})
	cmd.Flags = append(cmd.Flags, queueFlag())
	return cmd
}

// writeStatus writes the status table in tr's language; states, Slurm's
// conditions and the findings of board stay as they are.
func writeStatus(w io.Writer, v *view, nodes []board.Node, tr *i18n.Printer) error {
	for _, l := range v.warnings(nodes, tr) {
		if _, err := fmt.Fprintln(w, l); err != nil {
			return fmt.Errorf("status: write: %w", err)
		}
	}
	t := &table.Table{
		Title: tr.T("GPUs at %s", v.stamp(tr, v.Board.At)),
		Columns: []table.Column{
			{Key: "node", Title: tr.T("NODE")}, {Key: "slurm", Title: "SLURM"}, {Key: "gpu", Title: tr.T("GPU"), Kind: table.Int},
			{Key: "model", Title: tr.T("MODEL")}, {Key: "state", Title: tr.T("STATE")}, {Key: "job", Title: tr.T("JOB")},
			{Key: "elapsed", Title: tr.T("ELAPSED")}, {Key: "user", Title: tr.T("USER")}, {Key: "util", Title: tr.Text("UTIL%"), Kind: table.Int},
			{Key: "mem", Title: tr.T("MEM MiB")}, {Key: "procs", Title: tr.T("PROCESSES (pid:user:job:MiB)")}, {Key: "note", Title: tr.T("NOTE")},
		},
	}
	sliced := map[string][]string{}
	for _, s := range v.migSlices(nodes) {
		used := tr.T("? used")
		if s.Used >= 0 {
			used = tr.T("%d used", s.Used)
		}
		sliced[s.Node] = append(sliced[s.Node], tr.T("%s %s of %d, %d free", s.Profile, used, s.Total, s.Free))
	}
	for _, n := range nodes {
		slurm := string(n.Condition)
		switch {
		case !v.Board.Slurm:
			slurm = "?"
		case !n.InSlurm:
			slurm = tr.T("not in slurm")
		case n.NotResponding:
			slurm += "*"
		}
		for _, g := range n.GPUs {
			var jobs, elapsed, users []string
			for _, j := range g.Jobs {
				jobs = append(jobs, jobName(j))
				users = append(users, j.User)
				if !j.Start.IsZero() {
					elapsed = append(elapsed, short(v.Board.At.Sub(j.Start)))
				}
			}
			var util any
			if g.Util != nil {
				util = int64(*g.Util)
			}
			state := strings.ToUpper(string(g.State))
			if g.State == board.Idle && g.IdleSince != nil {
				state += tr.T(" for %s", short(v.Board.At.Sub(*g.IdleSince)))
			}
			var notes []string
			for _, nt := range g.Notes {
				notes = append(notes, noteText(nt, maxNoteRunes))
			}
			t.Rows = append(t.Rows, table.Row{Cells: []any{n.Name, slurm, int64(g.Index), dash(g.Model), state,
				dash(strings.Join(jobs, ",")), dash(strings.Join(elapsed, ",")), dash(strings.Join(users, ",")), util, mem(g), procs(g.Procs),
				dash(strings.Join(notes, "; "))}})
		}
		if sl := sliced[n.Name]; len(sl) > 0 {
			t.Notes = append(t.Notes, tr.T("%s: MIG slices %s", n.Name, strings.Join(sl, "; ")))
		}
		for _, nt := range n.Notes {
			t.Notes = append(t.Notes, tr.T("%s: note %s, until %s", n.Name, noteText(nt, maxNoteRunes), v.stamp(tr, nt.Until)))
		}
		if n.Reason != "" {
			t.Notes = append(t.Notes, fmt.Sprintf("%s: %s: %s", n.Name, n.Condition, n.Reason))
		}
		if len(n.Reservations) > 0 {
			t.Notes = append(t.Notes, tr.T("%s: in reservation %s", n.Name, strings.Join(n.Reservations, ", ")))
		}
		if n.Stale {
			if n.SnapshotAt.IsZero() {
				t.Notes = append(t.Notes, tr.T("%s: STALE: no live snapshot (is its agent running?)", n.Name))
			} else {
				t.Notes = append(t.Notes, tr.T("%s: STALE: last snapshot %s, %s ago", n.Name, v.stamp(tr, n.SnapshotAt), v.Board.At.Sub(n.SnapshotAt).Round(time.Second).String()))
			}
		}
	}
	if err := table.Write(w, t, table.Options{Format: table.Aligned}); err != nil {
		return fmt.Errorf("status: %w", err)
	}
	return nil
}

func jobName(j record.LiveJob) string {
	if j.Restart > 0 {
		return fmt.Sprintf("%d(r%d)", j.Job, j.Restart)
	}
	return strconv.FormatUint(j.Job, 10)
}

func mem(g board.GPU) string {
	if g.MemUsedMiB == nil && g.MemTotalMiB == nil {
		return "-"
	}
	num := func(p *uint64) string {
		if p == nil {
			return "?"
		}
		return strconv.FormatUint(*p, 10)
	}
	return num(g.MemUsedMiB) + "/" + num(g.MemTotalMiB)
}

func procs(ps []record.LiveProc) string {
	var out []string
	for i, p := range ps {
		if i == maxProcsShown {
			out = append(out, fmt.Sprintf("+%d more", len(ps)-i))
			break
		}
		s := fmt.Sprintf("%d:%s:%d:%d", p.PID, dash(p.User), p.Job, p.MemUsedMiB)
		if p.Foreign {
			s += "!"
		}
		out = append(out, s)
	}
	return dash(strings.Join(out, " "))
}
