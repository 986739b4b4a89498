package board

import (
	"context"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// NoteOf is the board's view of a ledger note.
func NoteOf(n store.Note) Note {
	return Note{ID: n.ID, Cluster: n.Cluster, Node: n.Node, GPU: n.GPU, Until: n.Until, Text: n.Text, Author: n.Author}
}

// LedgerNotes is a Source's Notes reader over st: the notes in force at
// now. The one conversion from the ledger's notes, so every board (serve,
// the demo, gpuacct status and free) matches notes the same way.
func LedgerNotes(st *store.Store) func(ctx context.Context, now time.Time) ([]Note, error) {
	return func(ctx context.Context, now time.Time) ([]Note, error) {
		ns, err := st.Notes(ctx, now, false)
		if err != nil {
			return nil, fmt.Errorf("notes in force: %w", err)
		}
		out := make([]Note, 0, len(ns))
		for _, n := range ns {
			out = append(out, NoteOf(n))
		}
		return out, nil
	}
}

// ListedNoteOf is a ledger note as a list of notes (NewNotesDoc) shows it.
func ListedNoteOf(n store.Note) ListedNote {
	return ListedNote{Note: NoteOf(n), Cluster: n.Cluster, Created: n.Created, RemovedAt: n.RemovedAt, RemovedBy: n.RemovedBy}
}
