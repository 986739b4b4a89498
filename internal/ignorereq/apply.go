package ignorereq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// Options say how to apply.
type Options struct {
	Dir string
	Now time.Time
	// Trusted reports whether a file owner may change the ledger (root
	// and the service user).
	Trusted func(uid int) bool
	// Tag in a job's comment ignores it (report.ignore_tag); "" never.
	Tag  string
	Host string
	// Cluster is the cluster notes are kept for (cluster.name).
	Cluster string
	// UserName names a uid (a note's author); nil: the system's user
	// database. A failed lookup gives "uid N".
	UserName func(uid int) (string, error)
}

func (o Options) userName(uid int) string {
	lookup := o.UserName
	if lookup == nil {
		lookup = systemUser
	}
	if n, err := lookup(uid); err == nil && n != "" {
		return n
	}
	return "uid " + strconv.Itoa(uid)
}

// ServiceUID is the uid of the service user name (ingest.service_user),
// -1 when name is "".
func ServiceUID(name string) (int, error) {
	if name == "" {
		return -1, nil
	}
	u, err := user.Lookup(name)
	if err != nil {
		return -1, fmt.Errorf("service user %q: %w", name, err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return -1, fmt.Errorf("service user %q: uid %q: %w", name, u.Uid, err)
	}
	return uid, nil
}

func systemUser(uid int) (string, error) {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return "", err
	}
	return u.Username, nil
}

// queue is one kind of request: where it waits, how it is checked and
// applied, and the name its outcome is kept under.
type queue struct {
	dir string
	// check refuses a request (its error is the outcome kept).
	check func(r *Request, owner int, perm fs.FileMode) error
	// apply applies a checked request, setting its outcome; an error is a
	// failure of the ledger (the request stays pending), not a refusal.
	apply func(ctx context.Context, r *Request, owner int) error
	// applied names the outcome file of the pending file name.
	applied func(name string, owner int) string
	// idFromName: the request's ID is its file name, whatever it says.
	idFromName bool
}

// Apply applies every pending request, oldest first, each in its own
// transaction, and ignores jobs whose comment carries the tag. It makes
// the note queue when missing. It returns how many requests it applied.
// Run only by the store's writer.
func Apply(ctx context.Context, st *store.Store, o Options) (int, error) {
	ign := queue{
		dir: o.Dir,
		check: func(r *Request, owner int, perm fs.FileMode) error {
			return checkIgnore(r, owner, perm, o.Trusted)
		},
		apply:   func(ctx context.Context, r *Request, _ int) error { return applyIgnore(ctx, st, r, o.Now) },
		applied: func(name string, _ int) string { return name },
	}
	n, err := applyQueue(ctx, ign, o.Now)
	if err != nil {
		return n, err
	}
	if o.Tag != "" {
		if err := applyTag(ctx, st, o); err != nil {
			return n, err
		}
	}
	if err := MakeNotesQueue(o.Dir); err != nil {
		return n, err
	}
	notes := queue{
		dir: NotesDir(o.Dir),
		check: func(r *Request, owner int, perm fs.FileMode) error {
			r.UID, r.By = owner, o.userName(owner)
			return checkNote(r, perm, o.Now)
		},
		apply: func(ctx context.Context, r *Request, owner int) error { return applyNote(ctx, st, r, owner, o) },
		// Owners name their outcomes: one user's file name cannot
		// overwrite another's outcome.
		applied: func(name string, owner int) string {
			return strings.TrimSuffix(name, ".json") + ".u" + strconv.Itoa(owner) + ".json"
		},
		idFromName: true,
	}
	m, err := applyQueue(ctx, notes, o.Now)
	return n + m, err
}

func applyQueue(ctx context.Context, q queue, now time.Time) (int, error) {
	names, err := pendingNames(pendingDir(q.dir))
	if err != nil {
		return 0, fmt.Errorf("apply requests in %s: %w", q.dir, err)
	}
	if len(names) == 0 {
		return 0, nil
	}
	if err := os.MkdirAll(appliedDir(q.dir), 0o755); err != nil {
		return 0, fmt.Errorf("apply requests in %s: %w", q.dir, err)
	}
	n := 0
	for _, name := range names {
		path := filepath.Join(pendingDir(q.dir), name)
		r, owner, perm, err := readRequest(path)
		if q.idFromName {
			r.ID = strings.TrimSuffix(name, ".json")
		}
		if err == nil {
			err = q.check(&r, owner, perm)
		}
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue // its writer took it back
		case err != nil:
			r.Error = err.Error()
			if !strings.HasPrefix(r.Error, "refused") {
				r.Error = "refused: " + r.Error
			}
		default:
			if err := q.apply(ctx, &r, owner); err != nil {
				return n, err
			}
		}
		if r.ID == "" || r.Error != "" {
			r.ID = strings.TrimSuffix(name, ".json")
		}
		at := now.UTC()
		r.AppliedAt = &at
		data, err := json.MarshalIndent(&r, "", "  ")
		if err != nil {
			return n, fmt.Errorf("apply request %s: %w", name, err)
		}
		if err := writeFile(filepath.Join(appliedDir(q.dir), q.applied(name, owner)), data); err != nil {
			return n, fmt.Errorf("apply request %s: %w", name, err)
		}
		if err := os.Remove(path); err != nil {
			return n, fmt.Errorf("apply request %s: %w", name, err)
		}
		n++
	}
	return n, nil
}

// Modes of the note queue: anyone may add a file to pending/ but not
// list it, nor rename or remove another's (sticky).
const (
	notesPendingMode = fs.ModeSticky | 0o733
	notesDirMode     = 0o755
)

// MakeNotesQueue makes (or repairs the modes of) the note queue under
// dir. The writer runs it; made by root, the directories go to the owner
// of dir (the service user), who must remove the files users leave.
func MakeNotesQueue(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("make note queue: %w", err)
	}
	top, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("make note queue: %w", err)
	}
	owner, _ := top.Sys().(*syscall.Stat_t)
	q := NotesDir(dir)
	for _, d := range []struct {
		path string
		mode fs.FileMode
	}{{q, notesDirMode}, {pendingDir(q), notesPendingMode}, {appliedDir(q), notesDirMode}} {
		made := false
		if err := os.Mkdir(d.path, 0o700); err == nil {
			made = true
		} else if !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("make note queue: %w", err)
		}
		fi, err := os.Lstat(d.path)
		if err != nil {
			return fmt.Errorf("make note queue: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("make note queue: %s is not a directory: remove it, and the writer makes the queue", d.path)
		}
		if made && owner != nil && os.Geteuid() == 0 {
			if err := os.Lchown(d.path, int(owner.Uid), int(owner.Gid)); err != nil {
				return fmt.Errorf("make note queue: %w", err)
			}
		}
		if fi.Mode()&(fs.ModePerm|fs.ModeSticky) != d.mode {
			if err := os.Chmod(d.path, d.mode); err != nil {
				return fmt.Errorf("make note queue: %s: %w", d.path, err)
			}
		}
	}
	return nil
}

// NoteOutcome reads the outcome of the note request id (Request.ID as
// submitted) that owner filed under the request directory dir, once
// applied; an error wrapping fs.ErrNotExist while it is pending.
func NoteOutcome(dir, id string, owner int) (Request, error) {
	path := filepath.Join(appliedDir(NotesDir(dir)), id+".u"+strconv.Itoa(owner)+".json")
	r, _, _, err := readRequest(path)
	if err != nil {
		return Request{}, fmt.Errorf("note request %s: %w", id, err)
	}
	return r, nil
}
