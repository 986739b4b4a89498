package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/aicloud/gpusuite/internal/sim/simcluster"
	"github.com/aicloud/gpusuite/internal/store"
)

// The demo's booking: a user keeps a free GPU for a run of hers, as
// `gpuacct note add` would record it.
const (
	bookingRequest = "demo-booking"
	bookingText    = "simulated booking: heidi profiles the new kernels here on Thursday, please leave it free"
	bookingAuthor  = "heidi"
	bookingUID     = 1008
	// bookingFor is how long the booking stays in force from the demo's
	// run, so that `demo serve` shows it for weeks after.
	bookingFor = 90 * 24 * time.Hour
)

// addBooking books the layout's booked GPU in the ledger st (a writer),
// as of now.
func addBooking(ctx context.Context, st *store.Ledger, in Info, now time.Time) error {
	node, g, ok := newLayout(in.Nodes, in.GPUs).find(booked)
	if !ok {
		return nil // a cluster too small for one
	}
	b, err := st.Begin(ctx, now)
	if err != nil {
		return fmt.Errorf("demo: book a gpu: %w", err)
	}
	n := store.Note{Cluster: in.Cluster, Node: simcluster.NodeName(node), GPU: &g, Until: now.Add(bookingFor).Truncate(time.Second),
		Text: bookingText, Author: bookingAuthor, UID: bookingUID, Created: now.Truncate(time.Second)}
	if _, err := b.AddNote(n, bookingRequest); err != nil {
		b.Rollback()
		return fmt.Errorf("demo: book a gpu: %w", err)
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("demo: book a gpu: %w", err)
	}
	return nil
}
