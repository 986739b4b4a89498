// Package boardcmd is the command line of gpuacct free and gpuacct status
// over internal/board: the agents' live snapshots joined with Slurm's view.
//
// Files: board.go (Deps, the shared flags, loading the board), free.go
// (gpuacct free), status.go (gpuacct status), notes.go (the ledger's notes
// in force, read-only).
package boardcmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/slurmstate"
)

// maxProblemLines bounds the skipped-file lines one run prints.
const maxProblemLines = 10

// slurmFileOld is the age past which a view read from --slurm-file is
// called old: its writer (gpuacct demo serve) rewrites it at least every
// minute while it runs.
const slurmFileOld = 2 * time.Minute

// Deps is what the commands take from the process; tests set each.
type Deps struct {
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Now    func() time.Time
	// Loc is the zone times are shown in.
	Loc *time.Location
	// Slurm reads Slurm's nodes and reservations within timeout.
	Slurm func(ctx context.Context, timeout time.Duration) (slurmstate.State, error)
	// Queue reads Slurm's pending jobs that ask for GPUs (status --queue).
	Queue func(ctx context.Context, timeout time.Duration) (slurmstate.Queue, error)
	// Notes reads the notes in force at now from the ledger at loc (a
	// SQLite file or a PostgreSQL URL).
	Notes func(ctx context.Context, loc string, busy time.Duration, now time.Time) ([]board.Note, error)
	// Waits reads the median waits of the runs started over
	// slurmstate.WaitWindow before now from the ledger at loc (status
	// --queue); nil reads none.
	Waits func(ctx context.Context, loc string, busy time.Duration, now time.Time) ([]slurmstate.Wait, error)
}

// System is Deps for the real process: scontrol through slurmstate.Reader.
func System(stdout, stderr io.Writer, getenv func(string) string) Deps {
	return Deps{
		Stdout: stdout, Stderr: stderr, Getenv: getenv, Now: time.Now, Loc: time.Local,
		Slurm: func(ctx context.Context, timeout time.Duration) (slurmstate.State, error) {
			return slurmstate.Reader{Timeout: timeout}.Read(ctx)
		},
		Queue: func(ctx context.Context, timeout time.Duration) (slurmstate.Queue, error) {
			return slurmstate.Reader{Timeout: timeout}.Queue(ctx)
		},
		Notes: LedgerNotes,
		Waits: LedgerWaits,
	}
}

func flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "live-dir", Usage: "directory of the agents' live snapshots (board.live_dir)", EnvVars: []string{"GPUSUITE_LIVE_DIR"}},
		&cli.BoolFlag{Name: "no-slurm", Usage: "do not ask Slurm: the agents' view alone"},
		&cli.StringFlag{Name: "slurm-file", Usage: "read Slurm's view from this file instead of asking Slurm, e.g. the demo's DIR/slurm.json (board.slurm_file)", EnvVars: []string{"GPUSUITE_SLURM_FILE"}},
		&cli.StringFlag{Name: "db", Usage: "ledger whose notes and bookings are shown (store.path)", EnvVars: []string{"GPUSUITE_DB"}},
		cliwire.StoreURLFlag(),
		&cli.DurationFlag{Name: "slurm-timeout", Usage: "bound on reading Slurm's state (board.slurm_timeout)"},
		&cli.StringFlag{Name: "format", Usage: "table or json", Value: "table"},
	}
}

// command is gpuacct free or status over the board's flags: show is
// given the board as loaded.
func command(d Deps, name, usage, usageText string, show func(*cli.Context, *view) error) *cli.Command {
	return &cli.Command{Name: name, Usage: usage, UsageText: usageText, Flags: flags(),
		Action: func(c *cli.Context) error {
			v, err := load(c, d, name)
			if err != nil {
				return err
			}
			return show(c, v)
		}}
}

// view is the board's view with how the command had it.
type view struct {
	*board.View
	// slurmFile is the file Slurm's view was read from ("" when asked
	// of Slurm), slurmOld its age when past slurmFileOld.
	slurmFile string
	slurmOld  time.Duration
	// slurmTimeout bounds each read of Slurm (board.slurm_timeout).
	slurmTimeout time.Duration
	// problems are the live files skipped; the view's Meta adds the
	// rest its documents list.
	problems []board.Problem
	json     bool
	loc      *time.Location
	// store and storeBusy are the ledger's location and busy timeout.
	store     string
	storeBusy time.Duration
	// slurm is Slurm's view the board was built with (nil: not had);
	// its typed gres count the MIG slices (slices.go).
	slurm *slurmstate.State
}

// load resolves the flags, reads the snapshots and Slurm, and builds.
func load(c *cli.Context, d Deps, cmd string) (*view, error) {
	format := strings.ToLower(c.String("format"))
	if format != "table" && format != "json" {
		return nil, cliwire.Usagef("%s: --format %q is not table or json", cmd, c.String("format"))
	}
	cfg, err := cliwire.LoadConfig(c, d.Getenv)
	if err != nil {
		return nil, err
	}
	cliwire.SetLedger(c, &cfg.Store)
	cliwire.SetStrings(c, map[string]*string{"live-dir": &cfg.Board.LiveDir})
	// An empty GPUSUITE_SLURM_FILE is as good as unset: it must not undo
	// the config file's board.slurm_file.
	if f := c.String("slurm-file"); f != "" {
		cfg.Board.SlurmFile = f
	}
	if c.IsSet("slurm-timeout") {
		if t := c.Duration("slurm-timeout"); t <= 0 || t > 5*time.Minute {
			return nil, cliwire.Usagef("%s: --slurm-timeout %s is outside 0s..5m", cmd, t)
		}
		cfg.Board.SlurmTimeout.Duration = c.Duration("slurm-timeout")
	}
	now := d.Now()
	noSlurm := c.Bool("no-slurm")
	v := &view{json: format == "json", loc: d.Loc, slurmTimeout: cfg.Board.SlurmTimeout.Duration, store: cfg.Store.Location(), storeBusy: cfg.Store.BusyTimeout.Duration}
	if v.loc == nil {
		v.loc = time.Local
	}
	lives, probs := board.Load(cfg.Board.LiveDir, now, board.Limits{})
	v.problems = probs
	var state *slurmstate.State
	var slurmErr, notesErr string
	switch {
	case noSlurm:
	case cfg.Board.SlurmFile != "":
		// A file named is the view asked for: unreadable, it is a
		// failure, not a board silently without Slurm.
		st, err := slurmstate.ReadFile(cfg.Board.SlurmFile)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		state, v.slurmFile = &st, cfg.Board.SlurmFile
		if age := now.Sub(st.At); age > slurmFileOld {
			v.slurmOld = age
		}
	default:
		st, err := d.Slurm(c.Context, cfg.Board.SlurmTimeout.Duration)
		if err != nil {
			slurmErr = err.Error()
		} else {
			state = &st
		}
	}
	if len(lives) == 0 && state == nil {
		why := "no live snapshot could be read"
		if len(probs) > 0 {
			why = probs[0].String()
		}
		return nil, fmt.Errorf("%s: nothing to show: %s, and Slurm was not read", cmd, why)
	}
	notes, err := d.Notes(c.Context, cfg.Store.Location(), cfg.Store.BusyTimeout.Duration, now)
	if err != nil {
		notesErr = err.Error()
	}
	b := board.BuildCluster(cfg.Cluster.Name, lives, state, notes, now)
	v.slurm = state
	v.View = board.NewView(&b, v.meta(b.NoteProblems, slurmErr, notesErr), !noSlurm, notesErr)
	return v, nil
}

// warnings are the lines that must not be missed: Slurm not had, stale
// nodes (of those shown), files skipped; in tr's language.
func (v *view) warnings(nodes []board.Node, tr *i18n.Printer) []string {
	var out []string
	switch {
	case v.Meta.SlurmError != "":
		out = append(out, tr.T("WARNING: Slurm is unreachable (%s): drains, down nodes, partitions and reservations are unknown; free means only that no job holds the GPU as its agent sees it", v.Meta.SlurmError))
	case !v.SlurmAsked:
		out = append(out, tr.T("WARNING: Slurm not asked (--no-slurm): drains, down nodes, partitions and reservations are unknown"))
	case v.slurmOld > 0:
		out = append(out, tr.T("WARNING: %s", v.slurmOldLine(tr)))
	}
	if v.NotesError != "" {
		out = append(out, tr.T("WARNING: notes not read (%s): bookings are not shown and booked GPUs may show as free (set store.path or --db)", v.NotesError))
	}
	var stale []string
	for _, n := range nodes {
		if n.Stale {
			stale = append(stale, n.Name)
		}
	}
	if len(stale) > 0 {
		out = append(out, tr.T("WARNING: %d node(s) STALE (no snapshot newer than 3 agent intervals; their GPUs are never counted free): %s", len(stale), strings.Join(stale, ", ")))
	}
	for i, p := range v.problems {
		if i == maxProblemLines {
			out = append(out, tr.T("WARNING: %d more live files skipped", len(v.problems)-i))
			break
		}
		out = append(out, tr.T("WARNING: live file skipped: %s", p.String()))
	}
	for _, p := range v.Board.NoteProblems {
		out = append(out, tr.T("WARNING: %s", p.String()))
	}
	return out
}

// meta is how v's board was had, for its JSON documents: every problem
// its warnings say.
func (v *view) meta(noteProblems []board.Problem, slurmErr, notesErr string) board.Meta {
	probs := append(v.problems[:len(v.problems):len(v.problems)], noteProblems...)
	if v.slurmOld > 0 {
		probs = append(probs, board.Problem{Err: v.slurmOldLine(i18n.Plain())})
	}
	if notesErr != "" {
		probs = append(probs, board.Problem{Err: "notes not read: " + notesErr})
	}
	return board.Meta{SlurmError: slurmErr, Problems: probs}
}

// slurmOldLine says, in tr's language, that the view read from a file
// is old.
func (v *view) slurmOldLine(tr *i18n.Printer) string {
	return tr.T("Slurm's view in %s is %s old (is the process that writes it, gpuacct demo serve, running?): drains and reservations may have changed since",
		v.slurmFile, v.slurmOld.Round(time.Second).String())
}

// stamp is t in v's zone as tr's reader writes a date; "" for none.
func (v *view) stamp(tr *i18n.Printer, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return tr.Time(t.In(v.loc), "2006-01-02 15:04:05 MST")
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// writeJSON is free's and status's --format json: indented, one document.
func writeJSON(w io.Writer, cmd string, out any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(out); err != nil {
		return fmt.Errorf("%s: write json: %w", cmd, err)
	}
	return nil
}
