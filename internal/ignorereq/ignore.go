package ignorereq

import (
	"context"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
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

// rows finds the job rows a spec names.
func rows(ctx context.Context, b *store.Batch, cluster, spec string) ([]int64, error) {
	q := `SELECT id FROM jobs WHERE `
	var args []any
	base, restart, hasRestart := strings.Cut(spec, "+")
	if a, t, ok := strings.Cut(base, "_"); ok {
		q += `array_job_id = ? AND array_task_id = ?`
		args = append(args, a, t)
	} else {
		q += `(job_id = ? OR array_job_id = ?)`
		args = append(args, base, base)
	}
	if hasRestart {
		q += ` AND restart = ?`
		args = append(args, restart)
	}
	if cluster != "" {
		q += ` AND cluster = ?`
		args = append(args, cluster)
	}
	rs, err := b.Tx().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("find job %s: %w", spec, err)
	}
	defer rs.Close()
	var out []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, fmt.Errorf("find job %s: %w", spec, err)
		}
		out = append(out, id)
	}
	return out, rs.Err()
}

func applyIgnore(ctx context.Context, st *store.Store, r *Request, now time.Time) error {
	b, err := st.Begin(ctx, now)
	if err != nil {
		return fmt.Errorf("apply ignore request %s: %w", r.ID, err)
	}
	reason := fmt.Sprintf("%s (by %s, %s)", r.Reason, r.By, r.Time.UTC().Format("2006-01-02 15:04Z"))
	for _, spec := range r.Jobs {
		ids, err := rows(ctx, b, r.Cluster, spec)
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
	rs, err := b.Tx().QueryContext(ctx, `SELECT id, job_id FROM jobs WHERE ignored = 0 AND comment IS NOT NULL AND instr(comment, ?) > 0`, o.Tag)
	if err != nil {
		b.Rollback()
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	type row struct{ id, job int64 }
	var todo []row
	for rs.Next() {
		var x row
		if err := rs.Scan(&x.id, &x.job); err != nil {
			rs.Close()
			b.Rollback()
			return fmt.Errorf("ignore tagged jobs: %w", err)
		}
		if !kept[strconv.FormatInt(x.job, 10)] {
			todo = append(todo, x)
		}
	}
	rs.Close()
	for _, x := range todo {
		if err := b.SetIgnored(x.id, true, "comment carries "+o.Tag); err != nil {
			b.Rollback()
			return fmt.Errorf("ignore tagged job %d: %w", x.job, err)
		}
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	return nil
}
