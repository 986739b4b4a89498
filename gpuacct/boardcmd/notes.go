package boardcmd

import (
	"context"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/notes"
	"github.com/aicloud/gpusuite/internal/store"
)

// notesTimeout bounds reading the notes from the ledger: a busy or hung
// /data must not hold up the board, which is shown without them.
const notesTimeout = 10 * time.Second

// maxNoteRunes is how much of a note's text a table cell shows; json has
// it whole.
const maxNoteRunes = 40

// LedgerNotes reads the notes in force at now from the ledger at loc (a
// SQLite file or a PostgreSQL URL), read-only (no lock: ingest may be
// writing), within notesTimeout.
func LedgerNotes(ctx context.Context, loc string, busy time.Duration, now time.Time) (ns []board.Note, err error) {
	err = readLedger(ctx, loc, busy, func(ctx context.Context, st *store.Ledger) error {
		ns, err = notes.InForce(st)(ctx, now)
		return err
	})
	return ns, err
}

// readLedger runs read on the ledger at loc (a SQLite file or a
// PostgreSQL URL) opened read-only (no lock: ingest may be writing),
// within notesTimeout.
func readLedger(ctx context.Context, loc string, busy time.Duration, read func(context.Context, *store.Ledger) error) error {
	ctx, cancel := context.WithTimeout(ctx, notesTimeout)
	defer cancel()
	o := store.At(loc)
	o.ReadOnly, o.BusyTimeout = true, busy
	st, err := store.Open(ctx, o)
	if err != nil {
		return err
	}
	defer st.Close()
	if err := read(ctx, st); err != nil {
		return fmt.Errorf("ledger %q: %w", st.Path, err)
	}
	return nil
}

// noteText is a note as a table shows it: its id (for gpuacct note rm),
// its text as gpuacct note list prints it (no control or format
// character: a terminal must not obey or reorder them), clipped to max
// runes (0: whole), and its author.
func noteText(n board.Note, max int) string {
	text := notes.Plain(n.Text)
	if r := []rune(text); max > 0 && len(r) > max {
		text = string(r[:max-1]) + "…"
	}
	return fmt.Sprintf("#%d %s (%s)", n.ID, text, notes.Plain(n.Author))
}

// short is a duration as a cell shows it: 45s, 25m, 2h05m, 3d04h.
func short(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", int(d/time.Hour), int(d%time.Hour/time.Minute))
	}
	return fmt.Sprintf("%dd%02dh", int(d/(24*time.Hour)), int(d%(24*time.Hour)/time.Hour))
}
