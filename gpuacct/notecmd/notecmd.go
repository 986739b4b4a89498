// Package notecmd is the command line of gpuacct note: notes and
// bookings on a node or one GPU, kept in the ledger through the request
// queue (internal/requests) and checked by internal/notes.
//
// Files: notecmd.go (Deps, gpuacct note and what its subcommands share),
// write.go (add and rm, which file a request for the ledger's writer),
// list.go (with the clusters -M chooses).
package notecmd

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/user"
	"strconv"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

// Deps is what the commands take from the process; tests set each.
type Deps struct {
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	Now    func() time.Time
	// Euid and Username are who writes or removes a note.
	Euid     func() int
	Username func() string
	// LookupUser names a uid (the authors of requests); nil: the
	// system's user database.
	LookupUser func(uid int) (string, error)
}

// System is Deps for the real process.
func System(stdout, stderr io.Writer, getenv func(string) string) Deps {
	return Deps{
		Stdout: stdout, Stderr: stderr, Getenv: getenv, Now: time.Now, Euid: os.Geteuid,
		Username: func() string {
			if u, err := user.Current(); err == nil {
				return u.Username
			}
			return "uid " + strconv.Itoa(os.Geteuid())
		},
	}
}

// Command is `gpuacct note`.
func Command(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "note",
		Usage: "notes and bookings on a node or one GPU, shown on the live board (anyone may add one)",
		UsageText: `gpuacct note add NODE[:GPU] --until TIME --text TEXT
gpuacct note list [--all] [--format table|json]
gpuacct note rm ID

A note says something about a node or one of its GPUs until a time:
"booked for the NeurIPS run", "fan noisy, do not use". It ends by itself
at --until; its author, root or the service user may remove it before.
Notes are kept in the ledger by its one writer: at once when no
'gpuacct serve' runs and you are root or the service user, else on
serve's next pass.`,
		Subcommands: []*cli.Command{addCommand(d), listCommand(d), rmCommand(d)},
	}
}

func commonFlags() []cli.Flag {
	return append(cliwire.LedgerFlags(),
		&cli.StringFlag{Name: "requests", Usage: "request directory (report.requests); notes wait in its notes/", EnvVars: []string{"GPUSUITE_REQUESTS"}},
		&cli.StringFlag{Name: "tz", Usage: "time zone --until is read and times are shown in (report.tz)", EnvVars: []string{"GPUSUITE_TZ"}},
	)
}

// env is the resolved configuration of one run.
type env struct {
	cfg   config.Config
	loc   *time.Location
	now   time.Time
	euid  int
	svc   int
	title string // "note add", for messages
	// lookupUser is Deps.LookupUser.
	lookupUser func(uid int) (string, error)
	getenv     func(string) string
}

func load(c *cli.Context, d Deps, title string) (*env, error) {
	cfg, err := cliwire.LoadConfig(c, d.Getenv)
	if err != nil {
		return nil, err
	}
	cliwire.SetLedger(c, &cfg.Store)
	cliwire.SetStrings(c, map[string]*string{"requests": &cfg.Report.Requests, "tz": &cfg.Report.TZ, "live-dir": &cfg.Board.LiveDir})
	cfg.FollowLedger()
	loc, err := timespec.LoadLocation(cfg.Report.TZ)
	if err != nil {
		return nil, cliwire.Usagef("%s: %v", title, err)
	}
	svc, err := requests.ServiceUID(cfg.Ingest.ServiceUser)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", title, err)
	}
	return &env{cfg: cfg, loc: loc, now: d.Now(), euid: d.Euid(), svc: svc, title: title, lookupUser: d.LookupUser, getenv: d.Getenv}, nil
}

func (e *env) trusted(uid int) bool { return uid == 0 || uid == e.svc }

// reader opens the ledger read-only; nil when it cannot be read (the
// writer checks the request again).
func (e *env) reader(ctx context.Context) (*store.Ledger, error) {
	return store.Open(ctx, store.Options{Path: e.cfg.Store.Path, URL: e.cfg.Store.URL, ReadOnly: true, BusyTimeout: e.cfg.Store.BusyTimeout.Duration})
}
