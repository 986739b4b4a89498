package report

import (
	"context"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// The dashboard's reads beyond the reports: nodes and when each was last
// heard from, the ingest's passes, running jobs with their GPUs' newest
// samples, notes, and the bounds that keep a window's job scan on the
// start index. They share d's one read-only pool, so that the web reads
// one read model and never the store itself. Their errors are the
// store's, for the caller to name.

// NodeOverview is a node with its GPUs and its newest record.
type NodeOverview = store.NodeOverview

// NodesOverview lists every node that shipped records, by cluster and name.
func (d *Ledger) NodesOverview(ctx context.Context) ([]NodeOverview, error) {
	return d.st.NodesOverview(ctx)
}

// MaxNodeID is the newest node's id: a newer one than at open means d's
// node names are out of date.
func (d *Ledger) MaxNodeID(ctx context.Context) (int64, error) { return d.st.MaxNodeID(ctx) }

// Pass is one ingest pass.
type Pass = store.PassRow

// LastPass is the newest ingest pass; found is false when none ran.
func (d *Ledger) LastPass(ctx context.Context) (p Pass, found bool, err error) {
	return d.st.LastPass(ctx)
}

// LastGoodPass is when the newest successful pass finished (nil: none).
func (d *Ledger) LastGoodPass(ctx context.Context) (*int64, error) { return d.st.LastGoodPass(ctx) }

// RunningGPU is one GPU of a running job (Row: its JobRow.Row) with its
// newest sample.
type RunningGPU = store.NowGPURow

// RunningJobs lists at most limit job runs of clusters (none: every
// cluster) that started and have not ended, newest first.
func (d *Ledger) RunningJobs(ctx context.Context, clusters []string, limit int) ([]JobRow, error) {
	return d.st.RunningJobs(ctx, store.RunningQuery{Clusters: clusters, Limit: limit})
}

// RunningGPUs lists the GPUs of the runs rows (JobRow.Row; the caller
// bounds them, as RunningJobs does) with each one's newest sample.
func (d *Ledger) RunningGPUs(ctx context.Context, rows []int64) ([]RunningGPU, error) {
	return d.st.NowGPUs(ctx, rows)
}

// Note is one note of the ledger.
type Note = store.Note

// Notes lists the notes in force at now, or with all every note kept
// (newest first); at most store.MaxNotes+1 either way.
func (d *Ledger) Notes(ctx context.Context, now time.Time, all bool) ([]Note, error) {
	return d.st.Notes(ctx, now, all)
}

// LongestEndedJob is the longest ended run's seconds.
func (d *Ledger) LongestEndedJob(ctx context.Context) (int64, error) {
	return d.st.LongestEndedJob(ctx)
}

// OldestOpenStart is the earliest start of a run without an end (nil:
// none).
func (d *Ledger) OldestOpenStart(ctx context.Context) (*int64, error) {
	return d.st.OldestOpenStart(ctx)
}

// ScanJobs calls fn for each run overlapping q's window in q.Sort order
// until fn returns false: Jobs for the dashboard, which checks the
// query and resolves the nodes (q.NodeIDs) itself, reads no teams, and
// names a failure in its own words.
func (d *Ledger) ScanJobs(ctx context.Context, q JobsQuery, fn func(*JobRow) bool) error {
	return d.st.Jobs(ctx, q.storeQuery(), func(r *JobRow) bool {
		// The store reuses r; fn may keep what it is given.
		j := *r
		return fn(&j)
	})
}

// IsURL reports whether loc names a PostgreSQL ledger (a URL), not a
// SQLite file.
func IsURL(loc string) bool { return store.IsPostgresURL(loc) }

// Redact is loc without a URL's password, for messages.
func Redact(loc string) string { return store.RedactURL(loc) }
