package requests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// Bounds of an ignore request, which the writer applies and the command
// checks before filing (a 70 KB reason was filed, refused by the writer,
// and reported applied).
const (
	// MaxReasonBytes bounds a request's reason: a sentence or two, kept
	// on every job it names.
	MaxReasonBytes = 4 << 10
	// MaxJobs bounds the job ids of one request (one transaction).
	MaxJobs = 1000
)

// CheckIgnoreBounds says, in one line, why an ignore or unignore of jobs
// job ids with reason cannot be one request.
func CheckIgnoreBounds(reason string, jobs int) error {
	switch {
	case len(reason) > MaxReasonBytes:
		return fmt.Errorf("--reason is %d bytes, more than the %d a request keeps: shorten it", len(reason), MaxReasonBytes)
	case jobs > MaxJobs:
		return fmt.Errorf("%d job ids, more than the %d one request takes: name at most %d at a time", jobs, MaxJobs, MaxJobs)
	}
	return nil
}

// IgnoreKind is the kind of `gpuacct ignore` and `unignore`: requests
// in the request directory itself, filed by root or the service user
// (o.Trusted), each deciding whether some jobs count; after them, the
// jobs whose comment carries o.Tag are ignored.
func IgnoreKind(st *store.Ledger, o Options) Kind {
	k := Kind{
		Name: "ignore",
		Dir:  o.Dir,
		Check: func(r *Request, owner int, perm fs.FileMode) error {
			return checkIgnore(r, owner, perm, o.Trusted)
		},
		Apply: func(ctx context.Context, r *Request, _ int, key string) error {
			return applyIgnore(ctx, st, r, o.Now, key)
		},
		Key:      func(name string, _ int) string { return "request/ignore/" + name },
		Outcome:  func(name string, _ int) string { return outcomeName(strings.TrimSuffix(name, ".json"), -1) },
		Keep:     IgnoreAppliedKeep,
		outcomes: func(l limits) int { return l.ignoreOutcomes },
	}
	if o.Tag != "" {
		k.Then = func(ctx context.Context) error { return applyTag(ctx, st, o) }
	}
	return k
}

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
	if err := CheckIgnoreBounds(r.Reason, len(r.Jobs)); err != nil {
		return fmt.Errorf("refused: %w", err)
	}
	if trusted != nil && !trusted(r.UID) {
		return fmt.Errorf("refused: requested by uid %d", r.UID)
	}
	return nil
}

func applyIgnore(ctx context.Context, st *store.Ledger, r *Request, now time.Time, key string) error {
	// Job ids are per cluster: a request naming a cluster the ledger does
	// not know is refused, never applied to another's jobs or to none.
	if r.Cluster != "" {
		known, err := st.KnownCluster(ctx, r.Cluster)
		if err != nil {
			return fmt.Errorf("apply ignore request %s: %w", r.ID, err)
		}
		if !known {
			r.Error = fmt.Sprintf("refused: no cluster %q in the ledger: name a cluster it has (gpuacct ignore -M)", r.Cluster)
			return nil
		}
	}
	b, err := beginOnce(ctx, st, now, r, "ignore", key)
	if err != nil {
		return err
	}
	reason := fmt.Sprintf("%s (by %s, %s)", r.Reason, r.By, r.Time.UTC().Format("2006-01-02 15:04Z"))
	at := r.made(now) // as its reason says, unless the writer dates it
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
			if err := b.DecideIgnored(id, store.Decision{Ignored: r.Action == Ignore, Reason: reason, Request: key, By: r.By, At: at}); err != nil {
				b.Rollback()
				return fmt.Errorf("apply ignore request %s: job %s: %w", r.ID, spec, err)
			}
		}
		r.Changed = append(r.Changed, spec)
	}
	if err := commitApplied(b, key); err != nil {
		return fmt.Errorf("apply ignore request %s: %w", r.ID, err)
	}
	return nil
}

// commitApplied records key applied in b, then commits b: a request's
// effect and its key are kept in one transaction, or neither is.
func commitApplied(b *store.Batch, key string) error {
	if err := b.KeyApplied(key, keyHash(key)); err != nil {
		b.Rollback()
		return err
	}
	return b.Commit()
}

// keyHash is what the ledger keeps with a request's key: the key names
// the request whole (its queue, owner and file name).
func keyHash(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:])
}

// beginOnce begins the transaction that applies r, a request of kind
// (named in errors), and claims key in it; errAppliedBefore when the
// ledger holds key already.
func beginOnce(ctx context.Context, st *store.Ledger, now time.Time, r *Request, kind, key string) (*store.Batch, error) {
	b, err := st.Begin(ctx, now)
	if err != nil {
		return nil, fmt.Errorf("apply %s request %s: %w", kind, r.ID, err)
	}
	if err := once(b, key); err != nil {
		b.Rollback()
		return nil, err
	}
	return b, nil
}

// once returns errAppliedBefore when the ledger holds key: a request
// the writer could not remove from its queue is applied once, never on
// each pass (an ignore and a later unignore flipped a job every pass).
func once(b *store.Batch, key string) error {
	state, err := b.AppliedKey(key, keyHash(key))
	if err != nil {
		return fmt.Errorf("request %s: %w", key, err)
	}
	if state != store.KeyNew {
		return errAppliedBefore
	}
	return nil
}

// applyTag ignores jobs whose comment carries the tag, unless a request
// decided them: the ledger keeps each job run's last explicit decision
// (store.Batch.DecideIgnored), so no listing of applied requests, however
// long, decides it.
func applyTag(ctx context.Context, st *store.Ledger, o Options) error {
	b, err := st.Begin(ctx, o.Now)
	if err != nil {
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	if err := importDecisions(b, o.Dir); err != nil {
		b.Rollback()
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	tagged, err := b.TaggedJobs(o.Tag)
	if err != nil {
		b.Rollback()
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	for _, x := range tagged {
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

// importKey marks the decisions of the applied/ log taken into the ledger.
const importKey = "request/ignore/decisions-before-0013"

// importDecisions records, once, the decisions the applied/ log of dir
// holds from before the ledger kept them (jobs.ignore_request), so that
// an unignore made then still holds against the tag. It reads the log as
// the writer did then (its first MaxListed requests); from then on the
// ledger alone decides.
func importDecisions(b *store.Batch, dir string) error {
	if err := once(b, importKey); errors.Is(err, errAppliedBefore) {
		return nil
	} else if err != nil {
		return err
	}
	applied, err := listDir(appliedDir(dir), false)
	if err != nil {
		return fmt.Errorf("read the applied requests of %s: %w", dir, err)
	}
	for _, r := range applied {
		if r.Error != "" || (r.Action != Ignore && r.Action != Unignore) {
			continue
		}
		for _, spec := range r.Changed {
			rows, err := b.JobRows(r.Cluster, spec)
			if err != nil {
				return err
			}
			for _, row := range rows {
				if err := b.MarkIgnoreDecided(row, "request/ignore/"+r.ID+".json"); err != nil {
					return err
				}
			}
		}
	}
	return b.KeyApplied(importKey, keyHash(importKey))
}
