package ignorereq

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// checkIgnore refuses an ignore request unless a trusted user owns it,
// nobody else may write it, and it asks for an ignore or unignore on
// behalf of a trusted user.
func checkIgnore(r *Request, owner int, perm fs.FileMode, trusted func(int) bool) error {
	if trusted != nil && !trusted(owner) {
		return fmt.Errorf("refused: owned by uid %d, not root or the service user", owner)
	}
	if perm&0o022 != 0 {
		return fmt.Errorf("refused: writable by group or others (%v)", perm)
	}
	if r.Schema != Schema {
		return fmt.Errorf("refused: schema %q is not %s", r.Schema, Schema)
	}
	if r.Action != Ignore && r.Action != Unignore {
		return fmt.Errorf("refused: action %q", r.Action)
	}
	if trusted != nil && !trusted(r.UID) {
		return fmt.Errorf("refused: requested by uid %d", r.UID)
	}
	return nil
}

func applyIgnore(ctx context.Context, st *store.Store, r *Request, now time.Time) error {
	b, err := st.Begin(ctx, now)
	if err != nil {
		return fmt.Errorf("apply ignore request %s: %w", r.ID, err)
	}
	reason := fmt.Sprintf("%s (by %s, %s)", r.Reason, r.By, r.Time.UTC().Format("2006-01-02 15:04Z"))
	for _, spec := range r.Jobs {
		ids, err := b.JobRows(r.Cluster, spec)
		if err != nil {
			b.Rollback()
			return fmt.Errorf("apply ignore request %s: %w", r.ID, err)
		}
		if len(ids) == 0 {
			r.NotFound = append(r.NotFound, spec)
			continue
		}
		for _, id := range ids {
			if err := b.SetIgnored(id, r.Action == Ignore, reason); err != nil {
				b.Rollback()
				return fmt.Errorf("apply ignore request %s: job %s: %w", r.ID, spec, err)
			}
		}
		r.Changed = append(r.Changed, spec)
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("apply ignore request %s: %w", r.ID, err)
	}
	return nil
}

// applyTag ignores jobs whose comment carries the tag, unless an applied
// unignore request named them.
func applyTag(ctx context.Context, st *store.Store, o Options) error {
	_, applied, err := List(o.Dir)
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for _, r := range applied {
		if r.Action == Unignore {
			for _, j := range r.Changed {
				kept[j] = true
			}
		}
	}
	b, err := st.Begin(ctx, o.Now)
	if err != nil {
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	tagged, err := b.TaggedJobs(o.Tag)
	if err != nil {
		b.Rollback()
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	var todo []store.TaggedJob
	for _, x := range tagged {
		if !kept[strconv.FormatInt(x.JobID, 10)] {
			todo = append(todo, x)
		}
	}
	for _, x := range todo {
		if err := b.SetIgnored(x.Row, true, "comment carries "+o.Tag); err != nil {
			b.Rollback()
			return fmt.Errorf("ignore tagged job %d: %w", x.JobID, err)
		}
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	return nil
}
