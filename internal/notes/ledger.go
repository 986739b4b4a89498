package notes

import (
	"context"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/store"
)

// The notes' tie to the ledger: the board takes notes as plain values
// (board.Note) and never reads the store; these are the one conversion.

// OnBoard is the board's view of a ledger note.
func OnBoard(n store.Note) board.Note {
	return board.Note{ID: n.ID, Cluster: n.Cluster, Node: n.Node, GPU: n.GPU, Until: n.Until, Text: n.Text, Author: n.Author}
}

// InForce is a board Source's Notes reader over st: the notes in force
// at now. Every board (serve, the demo, gpuacct status and free) reads
// them through it, so all match notes the same way.
func InForce(st *store.Ledger) func(ctx context.Context, now time.Time) ([]board.Note, error) {
	return func(ctx context.Context, now time.Time) ([]board.Note, error) {
		ns, err := st.Notes(ctx, now, false)
		if err != nil {
			return nil, fmt.Errorf("notes in force: %w", err)
		}
		out := make([]board.Note, 0, len(ns))
		for _, n := range ns {
			out = append(out, OnBoard(n))
		}
		return out, nil
	}
}

// Listed is a ledger note as a list of notes (board.NewNotesDoc) shows it.
func Listed(n store.Note) board.ListedNote {
	return board.ListedNote{Note: OnBoard(n), Cluster: n.Cluster, Created: n.Created, RemovedAt: n.RemovedAt, RemovedBy: n.RemovedBy}
}
