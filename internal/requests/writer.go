package requests

import (
	"context"
	"fmt"
	"log/slog"
	"os/user"
	"strconv"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// Options are what the writer's kinds need to check and apply requests.
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
	// UserID is the uid of a user name (a web user's notes are theirs);
	// nil: the system's user database.
	UserID func(name string) (int, error)
	// LiveDir is the agents' live snapshots (board.live_dir): a note's
	// node must be in the ledger or have a snapshot there; "" the
	// ledger alone.
	LiveDir string
	// Log gets what a pass removes or cannot keep; nil: discarded.
	Log *slog.Logger
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

// webUID is the uid of web user name, -1 when the system has none.
func (o Options) webUID(name string) int {
	lookup := o.UserID
	if lookup == nil {
		lookup = ServiceUID // the system's user database, by name
	}
	uid, err := lookup(name)
	if err != nil || uid < 0 {
		return -1
	}
	return uid
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

// Writer is the queue of the store's writer over st: the ignore kind,
// the note kind, then the notifier's opt-outs, as o says. gpuacct serve's
// ingest, and a command that finds no writer running, apply it; a later
// kind is added here.
func Writer(st *store.Ledger, o Options) *Queue {
	return New(o.Dir, o.Now, o.Log, IgnoreKind(st, o), NoteKind(st, o), NotifyKind(st, o))
}

// Apply applies every pending request of the writer's queue (Writer)
// and ignores jobs whose comment carries o.Tag. Run only by the store's
// writer.
func Apply(ctx context.Context, st *store.Ledger, o Options) (int, error) {
	return Writer(st, o).Apply(ctx)
}
