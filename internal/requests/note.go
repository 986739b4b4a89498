package requests

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/aicloud/gpusuite/internal/store"
)

// Bounds of a note.
const (
	// MaxTextRunes bounds a note's text: a line on the board.
	MaxTextRunes = 280
	// MaxAhead is how far ahead a note may end: bookings are renewed,
	// not kept forever.
	MaxAhead = 90 * 24 * time.Hour
	// MaxGPU bounds a GPU index.
	MaxGPU = 1023
	// maxNodeName bounds a node name (a host name).
	maxNodeName = 253
	// aheadSlack lets a request filed at the limit still apply on a
	// writer whose clock or pass runs a little later.
	aheadSlack = 24 * time.Hour
)

// CheckText returns text trimmed, or why it cannot be a note's text.
// Markup is kept as typed: every page escapes it.
func CheckText(text string) (string, error) {
	t := strings.TrimSpace(text)
	if !utf8.ValidString(t) {
		return "", errors.New("--text is not valid UTF-8: type it in a UTF-8 terminal")
	}
	n := 0
	for _, c := range t {
		n++
		if unicode.IsControl(c) {
			return "", fmt.Errorf("--text holds a control character (%U) at character %d: write the note on one line, without tabs or escapes", c, n)
		}
		// Line and paragraph separators (U+2028, U+2029) break the one
		// line a note is, on the board and in a terminal.
		if unicode.In(c, unicode.Zl, unicode.Zp) {
			return "", fmt.Errorf("--text holds a line separator (%U) at character %d: write the note on one line", c, n)
		}
		// Format characters are invisible yet reorder (U+202E) or hide
		// (U+200B) what the board shows next to them.
		if unicode.Is(unicode.Cf, c) {
			return "", fmt.Errorf("--text holds an invisible format character (%U) at character %d: retype the note as plain text", c, n)
		}
	}
	switch {
	case n == 0:
		return "", errors.New(`--text is empty: say what the note is for, e.g. --text "booked for the NeurIPS run"`)
	case n > MaxTextRunes:
		return "", fmt.Errorf("--text is %d characters, more than %d: shorten it", n, MaxTextRunes)
	}
	return t, nil
}

// CheckNode says why node cannot be a node's name.
func CheckNode(node string) error {
	if node == "" || len(node) > maxNodeName {
		return fmt.Errorf("node name %q is empty or longer than %d bytes", node, maxNodeName)
	}
	for _, c := range node {
		if !(c == '-' || c == '.' || c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return fmt.Errorf("node name %q holds %q: a node is named with letters, digits, '-', '_' and '.'", node, c)
		}
	}
	return nil
}

// NotAllowed is the refusal to remove someone else's note; Web: asked
// from the dashboard, whose users know admins, not uids.
type NotAllowed struct {
	Note store.Note
	Web  bool
}

func (e *NotAllowed) Error() string {
	if e.Web {
		return fmt.Sprintf("booked by %s; only %s or an admin can remove it", e.Note.Author, e.Note.Author)
	}
	return fmt.Sprintf("note %d is %s's (uid %d): only its author, root or the service user may remove it", e.Note.ID, e.Note.Author, e.Note.UID)
}

// CheckWebRemove says why the dashboard's user web (admin: in
// web.admins) may not remove n: only its author, by name, or an admin.
func CheckWebRemove(n store.Note, web string, admin bool) error {
	if admin || n.Author == web {
		return nil
	}
	return &NotAllowed{Note: n, Web: true}
}

// CheckRemove says why uid may not remove n: only its author, root or
// the service user (trusted) may.
func CheckRemove(n store.Note, uid int, trusted func(int) bool) error {
	if n.UID == uid || (trusted != nil && trusted(uid)) {
		return nil
	}
	return &NotAllowed{Note: n}
}

// RemoveError turns store.RemoveNote's (or store.Note's) refusals into
// one line a user acts on; other errors come back as they are. n is the
// note as it was.
func RemoveError(id int64, n store.Note, err error) error {
	switch {
	case errors.Is(err, store.ErrNoNote):
		return fmt.Errorf("no note %d: 'gpuacct note list --all' lists every note kept", id)
	case errors.Is(err, store.ErrNoteRemoved) && n.RemovedAt != nil:
		return fmt.Errorf("note %d was removed already, by %s at %s", id, n.RemovedBy, n.RemovedAt.UTC().Format("2006-01-02 15:04Z"))
	}
	return err
}

// refusal reports whether err from RemoveNote is a refusal (kept as the
// outcome) rather than a failure of the ledger.
func refusal(err error) bool {
	var na *NotAllowed
	return errors.Is(err, store.ErrNoNote) || errors.Is(err, store.ErrNoteRemoved) || errors.As(err, &na)
}

// NoteKind is the kind of `gpuacct note add` and `rm`: requests in the
// note queue (NotesDir), which anyone may file (its Open pending/); the
// author is the file's owner, never a uid written in it.
func NoteKind(st *store.Ledger, o Options) Kind {
	return openKind("note", NotesDir(o.Dir), o,
		func(r *Request, owner int, perm fs.FileMode) error {
			r.UID, r.By = owner, o.userName(owner)
			if r.Web != "" {
				// Only serve files for a web user: anyone else's file
				// naming one would speak for them.
				if o.Trusted == nil || !o.Trusted(owner) {
					return fmt.Errorf("refused: names web user %q, but only root or the service user (gpuacct serve) files for one", r.Web)
				}
				if len(r.Web) > maxNodeName {
					return fmt.Errorf("refused: web user is %d bytes, more than %d", len(r.Web), maxNodeName)
				}
				r.By = r.Web
			}
			return checkNote(r, perm, o.Now)
		},
		func(ctx context.Context, r *Request, owner int, key string) error {
			return applyNote(ctx, st, r, owner, key, o)
		})
}

// checkNote refuses a note request that is not whole and well formed.
// Its owner is its author, so any owner may file one; but a file others
// may write could be someone else's words.
func checkNote(r *Request, perm fs.FileMode, now time.Time) error {
	if perm&0o022 != 0 {
		return fmt.Errorf("refused: writable by group or others (%v)", perm)
	}
	if r.Schema != NoteSchema {
		return fmt.Errorf("refused: schema %q is not %s", r.Schema, NoteSchema)
	}
	if r.Note == nil || len(r.Jobs) > 0 {
		return errors.New("refused: a note request carries one note and no jobs")
	}
	// The fields beside the note are kept in its outcome: bounded here,
	// a request cannot make a large file of it.
	switch {
	case r.Reason != "":
		return errors.New("refused: a note request carries no reason: the note's text says it")
	case len(r.Host) > maxNodeName:
		return fmt.Errorf("refused: host is %d bytes, more than the %d of a host name", len(r.Host), maxNodeName)
	case len(r.Cluster) > maxNodeName:
		return fmt.Errorf("refused: cluster is %d bytes, more than %d", len(r.Cluster), maxNodeName)
	}
	switch r.Action {
	case NoteAdd:
		if err := CheckNode(r.Note.Node); err != nil {
			return fmt.Errorf("refused: %w", err)
		}
		if g := r.Note.GPU; g != nil && (*g < 0 || *g > MaxGPU) {
			return fmt.Errorf("refused: GPU %d is not 0..%d", *g, MaxGPU)
		}
		text, err := CheckText(r.Note.Text)
		if err != nil {
			return fmt.Errorf("refused: %w", err)
		}
		r.Note.Text = text
		if r.Note.Until.IsZero() || r.Note.Until.After(now.Add(MaxAhead+aheadSlack)) {
			return fmt.Errorf("refused: until %s is not within %s of now", r.Note.Until.UTC().Format(time.RFC3339), MaxAhead)
		}
		// A note ended already would never count against its author's
		// notes in force, yet be kept: refused, as the command does.
		if !r.Note.Until.After(now) {
			return fmt.Errorf("refused: until %s is not after now (%s): a note ends in the future", r.Note.Until.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
	case NoteRemove:
		if r.Note.ID <= 0 {
			return fmt.Errorf("refused: note id %d", r.Note.ID)
		}
	default:
		return fmt.Errorf("refused: action %q", r.Action)
	}
	return nil
}

// applyNote adds or removes the note of a checked request in its own
// transaction; a removal that may not be is kept as the outcome.
func applyNote(ctx context.Context, st *store.Ledger, r *Request, owner int, key string, o Options) error {
	// The note is kept for the cluster it names (a head of another
	// cluster files into a shared ledger); one naming none, as filed
	// before requests named theirs, for the writer's.
	cluster := r.Cluster
	if cluster == "" {
		cluster = o.Cluster
	}
	if r.Action == NoteAdd {
		// The command checked too, but a file can be written by hand.
		err := CheckTarget(ctx, st, o.LiveDir, o.Now, cluster, r.Note.Node, r.Note.GPU)
		var no *NoTarget
		if errors.As(err, &no) {
			r.Error = "refused: " + no.Error()
			return nil
		}
		if err != nil {
			return fmt.Errorf("apply note request %s: %w", r.ID, err)
		}
	}
	b, err := beginOnce(ctx, st, o.Now, r, "note", key)
	if err != nil {
		return err
	}
	// A web user's note is theirs: their uid when the system knows the
	// name (so the command's rm and per-user bound treat it as filed by
	// them), else -1, which no file owner is.
	author := owner
	if r.Web != "" {
		author = o.webUID(r.Web)
	}
	allowed := func(n store.Note) error { return CheckRemove(n, owner, o.Trusted) }
	if r.Web != "" {
		allowed = func(n store.Note) error { return CheckWebRemove(n, r.Web, r.WebAdmin) }
	}
	// The note a removal names, or the one an edit replaces: removed in
	// this transaction (an edit's only if the new note is kept), before
	// the bound counts.
	gone := r.Note.Replaces
	if r.Action == NoteRemove {
		gone = r.Note.ID
	}
	if gone > 0 {
		was, err := b.RemoveNote(gone, r.By, o.Now, allowed)
		if refusal(err) {
			b.Rollback()
			r.Error = "refused: " + RemoveError(gone, was, err).Error()
			return nil
		}
		if err != nil {
			b.Rollback()
			return fmt.Errorf("apply note request %s: %w", r.ID, err)
		}
	}
	if r.Action == NoteAdd {
		if author >= 0 && (o.Trusted == nil || !o.Trusted(author)) {
			active, err := b.ActiveNotes(author, o.Now)
			if err != nil {
				b.Rollback()
				return fmt.Errorf("apply note request %s: %w", r.ID, err)
			}
			if active >= MaxActivePerUser {
				b.Rollback()
				r.Error = fmt.Sprintf("refused: %s has %d notes in force, the most one user may keep: remove one ('gpuacct note rm ID') or let one end", r.By, active)
				return nil
			}
		}
		n := store.Note{Cluster: cluster, Node: r.Note.Node, GPU: r.Note.GPU, Until: r.Note.Until, Text: r.Note.Text,
			Author: r.By, UID: author, Created: r.made(o.Now)}
		// The owner in the key: one user's file name cannot stand for
		// another's request.
		id, err := b.AddNote(n, "u"+strconv.Itoa(owner)+"/"+r.ID)
		if err != nil {
			b.Rollback()
			return fmt.Errorf("apply note request %s: %w", r.ID, err)
		}
		r.Note.ID = id
	}
	if err := commitApplied(b, key); err != nil {
		return fmt.Errorf("apply note request %s: %w", r.ID, err)
	}
	return nil
}
