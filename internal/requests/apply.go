package requests

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
	"time"
)

// Kind is one kind of request the queue carries: its name, where its
// requests wait, how one is checked (validate) and applied, and how long
// its outcomes are kept. The writer's wiring builds a Queue with its
// kinds (Writer); a kind a later change adds is one more value there.
type Kind struct {
	// Name is the kind's name in logs and errors: ignore, note.
	Name string
	// Dir is the kind's queue: pending/ and applied/ under it.
	Dir string
	// Check refuses a request (its error is the outcome kept).
	Check func(r *Request, owner int, perm fs.FileMode) error
	// Apply applies a checked request, setting its outcome, and records
	// key in the same transaction; errAppliedBefore when the ledger holds
	// key already. Another error is a failure of the ledger (the request
	// stays pending), not a refusal.
	Apply func(ctx context.Context, r *Request, owner int, key string) error
	// Key is the ledger's key of the pending file name of owner.
	Key func(name string, owner int) string
	// Outcome names the outcome file of the pending file name.
	Outcome func(name string, owner int) string
	// IDFromName: the request's ID is its file name, whatever it says.
	IDFromName bool
	// Open: anyone may write pending/ (the note queue), so what is not a
	// request there is removed, each owner gets a share of a pass, every
	// outcome is kept short.
	Open bool
	// Trusted owners of an open queue's requests have no share.
	Trusted func(uid int) bool
	// Keep is how long an outcome is kept in applied/; outcomes picks
	// the most kept per owner from a pass's limits.
	Keep     time.Duration
	outcomes func(limits) int
	// Then runs after the kind's requests of a pass are applied (the
	// ignore kind's tag); nil: nothing.
	Then func(ctx context.Context) error
}

// openKind is a kind whose queue anyone may file into (Open), its ID the
// file name. The owner is in each request's ledger key, so one user's
// file name cannot stand for another's request, and in its outcome's
// name, so it cannot overwrite another's outcome.
func openKind(name, dir string, o Options, check func(r *Request, owner int, perm fs.FileMode) error,
	apply func(ctx context.Context, r *Request, owner int, key string) error) Kind {
	return Kind{
		Name: name, Dir: dir, Check: check, Apply: apply,
		Key: func(file string, owner int) string {
			return "request/" + name + "/u" + strconv.Itoa(owner) + "/" + file
		},
		Outcome:    func(file string, owner int) string { return outcomeName(strings.TrimSuffix(file, ".json"), owner) },
		IDFromName: true,
		Open:       true,
		Trusted:    o.Trusted,
		Keep:       AppliedKeep,
	}
}

// Queue is the writer's request queue: its kinds, applied in order on
// each pass. Run only by the store's writer.
type Queue struct {
	dir   string
	now   time.Time
	log   *slog.Logger
	lim   limits
	kinds []Kind
}

// New is the queue under the request directory dir carrying kinds, as
// of now; log gets what a pass removes or cannot keep (nil: discarded).
func New(dir string, now time.Time, log *slog.Logger, kinds ...Kind) *Queue {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Queue{dir: dir, now: now, log: log, lim: defaultLimits(), kinds: kinds}
}

// Bounds of a pass over the note queue.
const (
	// MaxActivePerUser bounds the notes one user (not root or the
	// service user) keeps in force: a user's notes cannot crowd out the
	// others' on the board.
	MaxActivePerUser = 20
	// AppliedKeep is how long the note queue keeps an outcome.
	AppliedKeep = 90 * 24 * time.Hour
	// IgnoreAppliedKeep is how long the ignore queue keeps an outcome
	// (the log of 'gpuacct ignore --list --log'); MaxIgnoreOutcomes bounds
	// how many it keeps per requesting user.
	IgnoreAppliedKeep = 400 * 24 * time.Hour
	MaxIgnoreOutcomes = 5000
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

// Apply applies every pending request of each kind, oldest first, each
// in its own transaction. It makes the queues when missing (MakeQueues),
// removes what is not a request from an open kind's pending/ and prunes
// each applied/. It returns how many requests it applied. A request
// whose outcome cannot be kept never stops the queue; a failure of the
// ledger does.
func (q *Queue) Apply(ctx context.Context) (int, error) {
	if err := MakeQueues(q.dir, -1); err != nil {
		return 0, err
	}
	total := 0
	for _, k := range q.kinds {
		n, err := q.applyKind(ctx, k)
		total += n
		if err != nil {
			return total, err
		}
		// The ledger keeps what each request decided: the log of
		// requests is bounded, by age and by count per owner.
		lim := q.lim
		if k.outcomes != nil {
			lim.outcomesPerOwner = k.outcomes(q.lim)
		}
		pruneApplied(appliedDir(k.Dir), q.now.Add(-k.Keep), lim, q.log)
		if k.Then != nil {
			if err := k.Then(ctx); err != nil {
				return total, err
			}
		}
	}
	return total, nil
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

// errAppliedBefore is what a queue's apply returns for a request whose
// key the ledger holds: its effect is in, and is not made again.
var errAppliedBefore = errors.New("request applied before")

func (qu *Queue) applyKind(ctx context.Context, q Kind) (int, error) {
	now, log := qu.now, qu.log
	var names []string
	var err error
	if q.Open {
		sw := sweep{now: now, trusted: q.Trusted, lim: qu.lim, log: log}
		names, err = sw.scan(pendingDir(q.Dir))
	} else {
		names, err = pendingNames(pendingDir(q.Dir))
	}
	if err != nil {
		return 0, fmt.Errorf("apply requests in %s: %w", q.Dir, err)
	}
	if len(names) == 0 {
		return 0, nil
	}
	if err := os.MkdirAll(appliedDir(q.Dir), 0o755); err != nil {
		return 0, fmt.Errorf("apply requests in %s: %w", q.Dir, err)
	}
	n := 0
	for _, name := range names {
		path := filepath.Join(pendingDir(q.Dir), name)
		r, owner, perm, err := readRequest(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // its writer took it back
		}
		if owner < 0 {
			// Not a regular file (a link, a FIFO, a directory) or one
			// that could not be looked at: it speaks for nobody, so no
			// outcome is written, under any name (a link named like
			// someone's outcome overwrote it).
			sweepEntry(path, err, log)
			continue
		}
		// A pending request has no outcome yet: one written in the file
		// is not its outcome.
		r.AppliedAt, r.Changed, r.NotFound, r.Error = nil, nil, nil, ""
		if q.IDFromName {
			r.ID = strings.TrimSuffix(name, ".json")
		}
		out := filepath.Join(appliedDir(q.Dir), q.Outcome(name, owner))
		again := false
		if err == nil {
			err = q.Check(&r, owner, perm)
		}
		switch {
		case err != nil:
			r.Error = err.Error()
			if !strings.HasPrefix(r.Error, "refused") {
				r.Error = "refused: " + r.Error
			}
		default:
			err := q.Apply(ctx, &r, owner, q.Key(name, owner))
			if errors.Is(err, errAppliedBefore) {
				again = true
			} else if err != nil {
				return n, err
			}
		}
		if again && exists(out) {
			// Applied and its outcome kept on an earlier pass: only the
			// file is left to remove, logged once (when first applied).
			if err := os.Remove(path); err == nil || errors.Is(err, fs.ErrNotExist) {
				n++
			} else {
				log.Debug("request applied before, still not removed from the queue", "request", path, "err", err)
			}
			continue
		}
		if r.ID == "" || r.Error != "" {
			r.ID = strings.TrimSuffix(name, ".json")
		}
		if q.Open {
			// The outcome records whose it is: pruning counts by it.
			r.UID = owner
		}
		if r.Error != "" || q.Open {
			// Anyone may file a note request: its outcome, kept by the
			// writer outside the user's quota, stays small.
			shrink(&r)
		}
		at := now.UTC()
		r.AppliedAt = &at
		data, err := json.MarshalIndent(&r, "", "  ")
		if err == nil {
			err = writeFile(out, data)
		}
		if err != nil && r.Error == "" {
			// Applied, its outcome not kept: it stays pending, and the
			// next pass (which finds its key applied) only keeps the
			// outcome; the requests after it go on.
			log.Error("request applied, its outcome not kept; trying again next pass", "request", path, "err", err)
			continue
		}
		if err != nil {
			// A refusal that cannot be kept is dropped, never left to
			// stop the queue.
			log.Warn("request refused and removed, its outcome not kept", "request", path, "refusal", r.Error, "err", err)
		}
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			// Its key keeps it from being applied again: the next passes
			// only try to remove it.
			log.Error("request applied, not removed from the queue: it is not applied again; remove it by hand", "request", path, "err", err)
			continue
		}
		n++
	}
	return n, nil
}

// exists reports whether path names anything.
func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

// sweepEntry removes path, an entry of pending/ that is no request file
// of its own (why), without an outcome; a directory goes only when
// empty.
func sweepEntry(path string, why error, log *slog.Logger) {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("not a request file, and not removed: remove it by hand", "path", path, "why", why, "err", err)
		return
	}
	log.Info("not a request file, removed from the queue without an outcome", "path", path, "why", why)
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
	r.Web = cut(r.Web)
	r.Rule = cut(r.Rule)
	r.Error = cut(r.Error)
	r.Changed, r.NotFound = nil, nil
	if r.Note != nil {
		r.Note.Node, r.Note.Text = cut(r.Note.Node), cutAt(r.Note.Text, maxText)
	}
	if r.Message != nil {
		m := *r.Message
		m.Key, m.Recipient, m.Subject, m.Body, m.Error = cut(m.Key), cut(m.Recipient), cut(m.Subject), cut(m.Body), cut(m.Error)
		r.Message = &m
	}
}

// Modes of the queues: anyone may add a file to the note queue's
// pending/ but not list it, nor rename or remove another's (sticky); the
// ignore queue and every applied/ are the service user's alone.
const (
	notesPendingMode = fs.ModeSticky | 0o733
	notesDirMode     = 0o755
	queueDirMode     = 0o755
)

// MakeQueues makes (or repairs the owner and modes of) both queues under
// dir: gpuacct serve at start and on each pass, the package on install,
// and a command run by root or the service user before it files. owner
// is the service user's uid (-1: the owner of dir); run as root, every
// directory goes to it, so that whoever files first, the service user
// can remove what is filed (a `sudo gpuacct ignore` made pending/
// root's, and serve re-applied each request there forever).
func MakeQueues(dir string, owner int) error {
	q, nq, strict := NotesDir(dir), NotifyDir(dir), owner >= 0
	for _, d := range []struct {
		path string
		mode fs.FileMode
	}{
		{dir, queueDirMode}, {pendingDir(dir), queueDirMode}, {appliedDir(dir), queueDirMode},
		{q, notesDirMode}, {pendingDir(q), notesPendingMode}, {appliedDir(q), notesDirMode},
		{nq, notesDirMode}, {pendingDir(nq), notesPendingMode}, {appliedDir(nq), notesDirMode},
	} {
		if d.path == dir {
			if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
				return fmt.Errorf("make request queues %s: %w", dir, err)
			}
		}
		if err := os.Mkdir(d.path, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("make request queues: %w", err)
		}
		fi, err := os.Lstat(d.path)
		if err != nil {
			return fmt.Errorf("make request queues: %w", err)
		}
		if !fi.IsDir() {
			return fmt.Errorf("make request queues: %s is not a directory: remove it, and the writer makes the queue", d.path)
		}
		if d.path == dir && owner < 0 {
			// The top directory says whose the queues are.
			owner = ownerOf(fi)
		}
		if uid := ownerOf(fi); owner >= 0 && uid != owner {
			if os.Geteuid() != 0 {
				if !strict {
					continue // a pass leaves it to serve's start to say
				}
				return fmt.Errorf("make request queues: %s is owned by uid %d, not uid %d, so requests filed there cannot be removed once applied: run 'chown -R %d %s' as root", d.path, uid, owner, owner, dir)
			}
			if err := os.Lchown(d.path, owner, groupOf(owner)); err != nil {
				return fmt.Errorf("make request queues: %w", err)
			}
		}
		if fi.Mode()&(fs.ModePerm|fs.ModeSticky) != d.mode {
			if err := os.Chmod(d.path, d.mode); err != nil {
				return fmt.Errorf("make request queues: %s: %w", d.path, err)
			}
		}
	}
	return nil
}

// groupOf is the primary group of uid, -1 (unchanged) when not known.
func groupOf(uid int) int {
	u, err := user.LookupId(strconv.Itoa(uid))
	if err != nil {
		return -1
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return -1
	}
	return gid
}

// IgnoreOutcome reads the outcome of the ignore request id (Request.ID
// as submitted) under the request directory dir, once applied; an error
// wrapping fs.ErrNotExist while it is pending.
func IgnoreOutcome(dir, id string) (Request, error) {
	r, _, _, err := readRequest(filepath.Join(appliedDir(dir), outcomeName(id, -1)))
	if err != nil {
		return Request{}, fmt.Errorf("ignore request %s: %w", id, err)
	}
	return r, nil
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
