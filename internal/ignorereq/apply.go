package ignorereq

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
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
	// LiveDir is the agents' live snapshots (board.live_dir): a note's
	// node must be in the ledger or have a snapshot there; "" the
	// ledger alone.
	LiveDir string
	// Log gets what a pass removes or cannot keep; nil: discarded.
	Log *slog.Logger
}

func (o Options) log() *slog.Logger {
	if o.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Log
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
	// open: anyone may write pending/ (the note queue), so what is not a
	// request there is removed, each owner gets a share of a pass, every
	// outcome is kept short, and applied/ is pruned.
	open bool
	// trusted owners of an open queue's requests have no share.
	trusted func(uid int) bool
}

// Bounds of a pass over the note queue.
const (
	// MaxActivePerUser bounds the notes one user (not root or the
	// service user) keeps in force: a user's notes cannot crowd out the
	// others' on the board.
	MaxActivePerUser = 20
	// AppliedKeep is how long the note queue keeps an outcome.
	AppliedKeep = 90 * 24 * time.Hour
	// maxLooked bounds the directory entries one pass spends itself on:
	// requests, and in the note queue junk removed (as board.Load's
	// maxListedFactor does); entries it may not remove count against
	// maxRead alone.
	maxLooked = 4 * MaxListed
	// junkAge spares a writer's temporary file while it is written.
	junkAge = time.Minute
	// maxOutcomeID bounds the request ID an outcome file is named by;
	// longer ones are named by their hash, so the name always fits.
	maxOutcomeID = 128
)

// Apply applies every pending request, oldest first, each in its own
// transaction, and ignores jobs whose comment carries the tag. It makes
// the note queue when missing, removes what is not a request from its
// pending/ and prunes its applied/. It returns how many requests it
// applied. A request whose outcome cannot be kept never stops the
// queue; a failure of the ledger does. Run only by the store's writer.
func Apply(ctx context.Context, st *store.Store, o Options) (int, error) {
	return apply(ctx, st, o, defaultLimits())
}

func apply(ctx context.Context, st *store.Store, o Options, lim limits) (int, error) {
	ign := queue{
		dir: o.Dir,
		check: func(r *Request, owner int, perm fs.FileMode) error {
			return checkIgnore(r, owner, perm, o.Trusted)
		},
		apply:   func(ctx context.Context, r *Request, _ int) error { return applyIgnore(ctx, st, r, o.Now) },
		applied: func(name string, _ int) string { return outcomeName(strings.TrimSuffix(name, ".json"), -1) },
	}
	n, err := applyQueue(ctx, ign, o.Now, lim, o.log())
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
		applied:    func(name string, owner int) string { return outcomeName(strings.TrimSuffix(name, ".json"), owner) },
		idFromName: true,
		open:       true,
		trusted:    o.Trusted,
	}
	m, err := applyQueue(ctx, notes, o.Now, lim, o.log())
	if err == nil {
		pruneApplied(appliedDir(notes.dir), o.Now.Add(-AppliedKeep), lim, o.log())
	}
	return n + m, err
}

// outcomeName is the file an outcome of request id is kept in: the id,
// or its hash when the id is too long for the name to fit a file system
// (a name of 245 bytes plus ".u1000.json" did not, and stopped the
// queue); owner -1 adds no owner (the ignore queue).
func outcomeName(id string, owner int) string {
	if len(id) > maxOutcomeID {
		sum := sha256.Sum256([]byte(id))
		id = "sha256-" + hex.EncodeToString(sum[:])
	}
	if owner == -1 {
		return id + ".json"
	}
	return id + ".u" + strconv.Itoa(owner) + ".json"
}

func applyQueue(ctx context.Context, q queue, now time.Time, lim limits, log *slog.Logger) (int, error) {
	var names []string
	var err error
	if q.open {
		sw := sweep{now: now, trusted: q.trusted, lim: lim, log: log}
		names, err = sw.scan(pendingDir(q.dir))
	} else {
		names, err = pendingNames(pendingDir(q.dir))
	}
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
		// A pending request has no outcome yet: one written in the file
		// is not its outcome.
		r.AppliedAt, r.Changed, r.NotFound, r.Error = nil, nil, nil, ""
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
		if r.Error != "" || q.open {
			// Anyone may file a note request: its outcome, kept by the
			// writer outside the user's quota, stays small.
			shrink(&r)
		}
		at := now.UTC()
		r.AppliedAt = &at
		data, err := json.MarshalIndent(&r, "", "  ")
		if err == nil {
			err = writeFile(filepath.Join(appliedDir(q.dir), q.applied(name, owner)), data)
		}
		if err != nil && r.Error == "" {
			// Applied, its outcome not kept: it stays pending and is
			// applied again next pass (the ledger keeps one note per
			// request); the requests after it go on.
			log.Error("request applied, its outcome not kept; trying again next pass", "request", path, "err", err)
			continue
		}
		if err != nil {
			// A refusal that cannot be kept is dropped, never left to
			// stop the queue.
			log.Warn("request refused and removed, its outcome not kept", "request", path, "refusal", r.Error, "err", err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			log.Error("request not removed from the queue", "request", path, "err", err)
			continue
		}
		n++
	}
	return n, nil
}

// shrink bounds what an outcome keeps of its request: a request file
// may be 64 KiB, its outcome stays small. A note's text keeps room for
// MaxTextRunes characters, so an applied note's text is never cut.
func shrink(r *Request) {
	const maxField, maxText = 512, 4 * MaxTextRunes
	cutAt := func(s string, n int) string {
		if len(s) <= n {
			return s
		}
		return strings.ToValidUTF8(s[:n], "") + "…"
	}
	cut := func(s string) string { return cutAt(s, maxField) }
	if len(r.Jobs) > 16 {
		r.Jobs = append(r.Jobs[:16:16], fmt.Sprintf("… %d more", len(r.Jobs)-16))
	}
	for i := range r.Jobs {
		r.Jobs[i] = cut(r.Jobs[i])
	}
	r.Reason, r.By, r.Host, r.Cluster, r.Schema, r.Action = cut(r.Reason), cut(r.By), cut(r.Host), cut(r.Cluster), cut(r.Schema), cut(r.Action)
	r.Error = cut(r.Error)
	r.Changed, r.NotFound = nil, nil
	if r.Note != nil {
		r.Note.Node, r.Note.Text = cut(r.Note.Node), cutAt(r.Note.Text, maxText)
	}
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
	path := filepath.Join(appliedDir(NotesDir(dir)), outcomeName(id, owner))
	r, _, _, err := readRequest(path)
	if err != nil {
		return Request{}, fmt.Errorf("note request %s: %w", id, err)
	}
	return r, nil
}
