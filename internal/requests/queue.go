// Package requests is the writer's request queue: ledger changes asked
// by commands, carried to the store's one writer. A request is a JSON
// file in its kind's pending/ directory, written whole (temp, fsync,
// rename); the writer (gpuacct serve each pass, or the command itself
// when no writer runs) applies it in one transaction through
// store.Batch and moves it to applied/ with the outcome. The applied
// files are the log of who changed what (docs/reports.md, docs/board.md).
//
// A Queue carries kinds (Kind: a name, a check, an apply), given to it
// by the writer's wiring (Writer): ignore requests in <dir>/, writable by
// root and the service user only (`gpuacct ignore`/`unignore`), and note
// requests in <dir>/notes/ (`gpuacct note`), whose pending/ is mode 1733
// (anyone may add a file, nobody may list or touch another's) so that
// ordinary users can file them. A note request's author is the owner of
// its file, never a uid written in it.
//
// Files: queue.go the request file (Submit, List, reading one bounded);
// apply.go Kind, Queue and a pass over it, the queues' directories;
// sweep.go what a pass removes and prunes in an open queue; writer.go the
// writer's wiring (Options, Writer); ignore.go, note.go and notifyoff.go
// the kinds (notifyoff.go: a user's opt-out of the notifier's rules, in
// <dir>/notify/, open as the note queue); target.go what a note may be on.
package requests

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/spool"
)

// Schemas of the kinds of request file.
const (
	Schema       = "gpusuite.ignore/v1"
	NoteSchema   = "gpusuite.note/v1"
	NotifySchema = "gpusuite.notify/v1"
)

// Actions.
const (
	Ignore     = "ignore"
	Unignore   = "unignore"
	NoteAdd    = "note-add"
	NoteRemove = "note-rm"
	NotifyOff  = "notify-off"
	NotifyOn   = "notify-on"
	// NotifyRecord keeps a message gpuacct mailprog sent, or could not
	// send, in the outbox.
	NotifyRecord = "notify-record"
)

// Bounds on what one List or Apply reads.
const (
	// MaxRequestBytes bounds one request file: a request is a few
	// hundred bytes.
	MaxRequestBytes = 64 << 10
	// MaxListed bounds the requests read from one directory; a pass
	// applies the rest on later passes.
	MaxListed = 10_000
)

// Request is one ignore or unignore of some jobs, or one note added or
// removed.
type Request struct {
	Schema string `json:"schema"`
	ID     string `json:"id"`
	Action string `json:"action"`
	// Jobs are as users type them: 1234 (every run, and every task when
	// it is an array), 1234_7, 1234+1.
	Jobs []string `json:"jobs,omitempty"`
	Note *Note    `json:"note,omitempty"`
	// Rule is the notifier's rule a notify-off or notify-on names.
	Rule string `json:"rule,omitempty"`
	// Message is what a notify-record keeps.
	Message *Message `json:"message,omitempty"`
	Cluster string   `json:"cluster,omitempty"`
	Reason  string   `json:"reason,omitempty"`
	// By and UID are who asked; for a note request the writer replaces
	// them with the file's owner.
	By  string `json:"by"`
	UID int    `json:"uid"`
	// Web is the user the dashboard logged in and filed a note request
	// for: believed only in a file root or the service user (gpuacct
	// serve) owns, where it is the author. WebAdmin: that user is in
	// web.admins, and may remove anyone's note.
	Web      string    `json:"web,omitempty"`
	WebAdmin bool      `json:"web_admin,omitempty"`
	Host     string    `json:"host,omitempty"`
	Time     time.Time `json:"time"`
	// Outcome fields, set when applied.
	AppliedAt *time.Time `json:"applied_at,omitempty"`
	Changed   []string   `json:"changed,omitempty"`
	NotFound  []string   `json:"not_found,omitempty"`
	Error     string     `json:"error,omitempty"`
}

// made is when r was made, as the writer dates what it applies: a request
// without a time, or dated past now by a wrong clock, is dated now.
func (r *Request) made(now time.Time) time.Time {
	if r.Time.IsZero() || r.Time.After(now) {
		return now
	}
	return r.Time
}

// Note is what a note request carries.
type Note struct {
	// ID is the note to remove (note-rm), or the note kept once a
	// note-add is applied.
	ID    int64     `json:"id,omitempty"`
	Node  string    `json:"node,omitempty"`
	GPU   *int      `json:"gpu,omitempty"`
	Until time.Time `json:"until,omitzero"`
	Text  string    `json:"text,omitempty"`
	// Replaces is the note a note-add takes the place of (an edit): both
	// in one transaction, the old removed only when the new is kept.
	Replaces int64 `json:"replaces,omitempty"`
}

// NotesDir is the note queue under the request directory dir.
func NotesDir(dir string) string { return filepath.Join(dir, "notes") }

// Dirs under a queue.
func pendingDir(dir string) string { return filepath.Join(dir, "pending") }
func appliedDir(dir string) string { return filepath.Join(dir, "applied") }

func isNote(action string) bool { return action == NoteAdd || action == NoteRemove }

// NotifyDir is the notifier's opt-out queue under the request directory
// dir: open to every user, as the note queue is.
func NotifyDir(dir string) string { return filepath.Join(dir, "notify") }

func isNotify(action string) bool {
	return action == NotifyOff || action == NotifyOn || action == NotifyRecord
}

// Submit writes r into its queue under dir (the request directory)
// durably and returns its file path. The queue must exist (MakeQueues,
// done by the writer, the package, or a command run by root or the
// service user before it files): a queue made by whoever files first
// would be that user's.
func Submit(dir string, r *Request) (string, error) {
	var b [4]byte
	_, _ = rand.Read(b[:])
	q := dir
	r.Schema = Schema
	switch {
	case isNote(r.Action):
		q, r.Schema = NotesDir(dir), NoteSchema
	case isNotify(r.Action):
		q, r.Schema = NotifyDir(dir), NotifySchema
	}
	if q != dir {
		// The uid in the name keeps one user's names apart from another's
		// (the writer names applied files by owner too); nanoseconds
		// order a user's requests, as they may not list the queue.
		r.ID = fmt.Sprintf("%s-u%d-%d-%s", r.Time.UTC().Format("20060102T150405.000000000Z"), r.UID, os.Getpid(), hex.EncodeToString(b[:]))
	} else if r.ID == "" {
		// Time, then how many requests came before (orders requests of
		// the same second), then pid and random bytes (unique).
		r.ID = fmt.Sprintf("%s-%06d-%d-%s", r.Time.UTC().Format("20060102T150405Z"), filed(dir), os.Getpid(), hex.EncodeToString(b[:]))
	}
	if fi, err := os.Stat(pendingDir(q)); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s request: queue %s is not there yet: gpuacct serve makes it at start (or run the command once as root or the service user)", r.Action, pendingDir(q))
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("%s request: %w", r.Action, err)
	}
	// The writer refuses a larger file: it is not filed at all.
	if len(data) > MaxRequestBytes {
		return "", fmt.Errorf("%s request: %d bytes, more than the %d the writer reads: name fewer jobs or shorten the text", r.Action, len(data), MaxRequestBytes)
	}
	final := filepath.Join(pendingDir(q), r.ID+".json")
	if err := writeFile(final, data); err != nil {
		return "", fmt.Errorf("%s request: %w", r.Action, err)
	}
	return final, nil
}

// filed counts the ignore requests in dir/pending and dir/applied, as
// List would list them, by their names alone: no file is opened.
func filed(dir string) int {
	pending, err := pendingNames(pendingDir(dir))
	if err != nil {
		return 0
	}
	applied, _ := pendingNames(appliedDir(dir))
	return len(pending) + len(applied)
}

func writeFile(path string, data []byte) error {
	// A short temporary name: a long final name plus a prefix and a
	// suffix could pass the file system's limit.
	var b [8]byte
	_, _ = rand.Read(b[:])
	tmp := filepath.Join(filepath.Dir(path), "."+hex.EncodeToString(b[:])+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if errors.Is(err, fs.ErrPermission) {
		// A user may not read the note queue (mode 1733): the file is
		// synced, its name is the writer's to make durable.
		return nil
	}
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// List reads the ignore requests in dir/pending and dir/applied, oldest
// first.
func List(dir string) (pending, applied []Request, err error) {
	if pending, err = listDir(pendingDir(dir), false); err != nil {
		return nil, nil, err
	}
	applied, err = listDir(appliedDir(dir), false)
	return pending, applied, err
}

// NoteLists are the note requests of a request directory.
type NoteLists struct {
	// Pending are the requests not yet applied, each with its file's
	// owner as UID. Hidden: the reader may not list pending/ (only root
	// and the service user may), so Pending is empty.
	Pending []Request
	Hidden  bool
	Applied []Request
}

// ListNotes reads the note requests under dir, oldest first. userName
// names the owners of pending requests (nil: the system's user database).
func ListNotes(dir string, userName func(uid int) (string, error)) (NoteLists, error) {
	var l NoteLists
	var err error
	q := NotesDir(dir)
	l.Pending, err = listDir(pendingDir(q), true)
	// Each owner is looked up once: a queue holds many requests of few
	// users, and a lookup may ask the network's user directory.
	names, o := map[int]string{}, Options{UserName: userName}
	for i := range l.Pending {
		uid := l.Pending[i].UID
		n, ok := names[uid]
		if !ok {
			n = o.userName(uid)
			names[uid] = n
		}
		l.Pending[i].By = n
	}
	switch {
	case errors.Is(err, fs.ErrPermission):
		l.Pending, l.Hidden = nil, true
	case err != nil:
		return l, err
	}
	l.Applied, err = listDir(appliedDir(q), false)
	return l, err
}

// listDir reads the requests of d; owners: each one's UID is its file's
// owner (pending note requests: the author is who wrote the file).
func listDir(d string, owners bool) ([]Request, error) {
	names, err := pendingNames(d)
	if err != nil {
		return nil, err
	}
	var out []Request
	for _, name := range names {
		r, owner, _, err := readRequest(filepath.Join(d, name))
		if err != nil {
			r = Request{ID: strings.TrimSuffix(name, ".json"), Error: "unreadable: " + err.Error()}
		}
		if owners {
			r.UID = owner
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// readRequest opens path without following a link or blocking, and
// decodes it when it is a regular file within MaxRequestBytes. It
// returns the file's owner and permissions, which say whom it speaks
// for.
func readRequest(path string) (Request, int, fs.FileMode, error) {
	var r Request
	data, fi, err := spool.ReadRegular(path, MaxRequestBytes)
	if errors.Is(err, syscall.ELOOP) {
		return r, -1, 0, errors.New("refused: a symbolic link, not a request file")
	}
	if fi == nil {
		return r, -1, 0, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if errors.Is(err, spool.ErrNotRegular) || !ok {
		return r, -1, 0, errors.New("refused: not a regular file")
	}
	owner := int(st.Uid)
	if st.Nlink != 1 {
		// A hard link to someone else's file would speak with its owner.
		return r, owner, fi.Mode().Perm(), fmt.Errorf("refused: %d links to the file; a request is a file of its own", st.Nlink)
	}
	switch {
	case errors.Is(err, spool.ErrTooLarge):
		return r, owner, fi.Mode().Perm(), fmt.Errorf("refused: %d bytes, more than the %d a request may be", fi.Size(), MaxRequestBytes)
	case errors.Is(err, spool.ErrGrew):
		return r, owner, fi.Mode().Perm(), fmt.Errorf("refused: grew past the %d bytes a request may be", MaxRequestBytes)
	case err != nil:
		return r, owner, fi.Mode().Perm(), err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Request{}, owner, fi.Mode().Perm(), fmt.Errorf("refused: not a request: %v", err)
	}
	return r, owner, fi.Mode().Perm(), nil
}
