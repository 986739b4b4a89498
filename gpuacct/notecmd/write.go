package notecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/notes"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

func addCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "add",
		Usage: "leave a note on a node or one GPU until a time",
		UsageText: `gpuacct note add NODE[:GPU] --until TIME --text TEXT

NODE must be in the ledger or have a live snapshot (gpuacct status lists
them); GPU is its index. --until is a duration from now (4h, 3d, 2w,
1h30m) or a time (` + timespec.Formats + `) in report.tz, at most 90 days
ahead. --text is one line of at most 280 characters.

Examples:
   gpuacct note add gpu01:3 --until 3d --text "booked for the NeurIPS run"
   gpuacct note add gpu02 --until 2w --text "fan noisy, do not use"
   gpuacct note add gpu02:1 --until now+8hours --text "reboot tonight"`,
		Flags: append(commonFlags(),
			&cli.StringFlag{Name: "until", Usage: "when the note ends: a duration (4h, 3d) or a time"},
			&cli.StringFlag{Name: "text", Usage: "what the note says (one line, at most 280 characters)"},
			&cli.StringFlag{Name: "live-dir", Usage: "directory of the agents' live snapshots (board.live_dir)", EnvVars: []string{"GPUSUITE_LIVE_DIR"}},
		),
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			const title = "note add"
			if len(args) != 1 {
				return cliwire.Usagef("%s: give one NODE or NODE:GPU (see 'gpuacct note add --help')", title)
			}
			if !c.IsSet("until") || !c.IsSet("text") {
				return cliwire.Usagef("%s: --until and --text are required, e.g. --until 3d --text \"booked for the NeurIPS run\"", title)
			}
			node, gpu, err := notes.ParseTarget(args[0])
			if err != nil {
				return cliwire.Usagef("%s: %v", title, err)
			}
			text, err := requests.CheckText(c.String("text"))
			if err != nil {
				return cliwire.Usagef("%s: %v", title, err)
			}
			e, err := load(c, d, title)
			if err != nil {
				return err
			}
			until, err := notes.ParseUntil(c.String("until"), e.now, e.loc)
			if err != nil {
				return cliwire.Usagef("%s: %v", title, err)
			}
			st, err := e.reader(c.Context)
			if err == nil {
				defer st.Close()
			} else {
				st = nil // a ledger not made yet: the live snapshots alone say
			}
			if err := requests.CheckTarget(c.Context, st, e.cfg.Board.LiveDir, e.now, e.cfg.Cluster.Name, node, gpu); err != nil {
				return fmt.Errorf("%s: %w", title, err)
			}
			target := node
			if gpu != nil {
				target += ":" + strconv.Itoa(*gpu)
			}
			out, err := e.submit(c.Context, d, requests.NoteAdd, &requests.Note{Node: node, GPU: gpu, Until: until.UTC(), Text: text}, title+" "+target)
			if out == nil || err != nil {
				return err
			}
			_, err = fmt.Fprintf(d.Stdout, "note %d on %s until %s: %s\n", out.Note.ID, target, until.In(e.loc).Format("2006-01-02 15:04 MST"), text)
			return err
		},
	}
}

func rmCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "rm",
		Usage: "remove a note before it ends (its author, root or the service user)",
		UsageText: `gpuacct note rm ID

ID is the note's number in 'gpuacct note list'. The note is kept in the
ledger as removed, with who removed it ('gpuacct note list --all').

Examples:
   gpuacct note rm 12`,
		Flags: commonFlags(),
		Action: func(c *cli.Context) error {
			args := c.Args().Slice()
			const title = "note rm"
			if len(args) != 1 {
				return cliwire.Usagef("%s: give one note ID (see 'gpuacct note list')", title)
			}
			id, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || id <= 0 {
				return cliwire.Usagef("%s: %q is not a note ID: give the number 'gpuacct note list' shows", title, args[0])
			}
			e, err := load(c, d, title)
			if err != nil {
				return err
			}
			// Say at once what the writer would refuse; the writer checks
			// again, against the request file's owner.
			if st, err := e.reader(c.Context); err == nil {
				n, err := st.Note(c.Context, id)
				st.Close()
				if err != nil {
					return fmt.Errorf("%s: %w", title, requests.RemoveError(id, n, err))
				}
				if n.RemovedAt != nil {
					return fmt.Errorf("%s: %w", title, requests.RemoveError(id, n, store.ErrNoteRemoved))
				}
				if err := requests.CheckRemove(n, e.euid, e.trusted); err != nil {
					return fmt.Errorf("%s: %w", title, err)
				}
			}
			out, err := e.submit(c.Context, d, requests.NoteRemove, &requests.Note{ID: id}, fmt.Sprintf("%s %d", title, id))
			if out == nil || err != nil {
				return err
			}
			_, err = fmt.Fprintf(d.Stdout, "note %d removed\n", id)
			return err
		},
	}
}

// file queues r and, when this user may write the ledger and no writer
// holds it, applies it at once. It returns the outcome, or nil when the
// request waits for gpuacct serve, and the request's path.
func (e *env) file(ctx context.Context, r *requests.Request) (*requests.Request, string, error) {
	dir := e.cfg.Report.Requests
	writer := e.trusted(e.euid)
	if writer {
		if err := requests.MakeQueues(dir, e.svc); err != nil {
			return nil, "", fmt.Errorf("%s: %w", e.title, err)
		}
	}
	path, err := requests.Submit(dir, r)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", e.title, err)
	}
	if !writer {
		return nil, path, nil
	}
	st, err := store.Open(ctx, store.Options{Path: e.cfg.Store.Path, URL: e.cfg.Store.URL, Journal: e.cfg.Store.JournalMode, BusyTimeout: e.cfg.Store.BusyTimeout.Duration})
	if errors.Is(err, store.ErrLocked) {
		return nil, path, nil
	}
	if err != nil {
		return nil, path, fmt.Errorf("%s: request %s is queued, but the ledger cannot be written: %w", e.title, path, err)
	}
	defer st.Close()
	host, _ := os.Hostname()
	if _, err := requests.Apply(ctx, st, requests.Options{Dir: dir, Now: e.now, Host: host, Tag: e.cfg.Report.IgnoreTag,
		Cluster: e.cfg.Cluster.Name, Trusted: e.trusted, UserName: e.lookupUser, LiveDir: e.cfg.Board.LiveDir}); err != nil {
		return nil, path, fmt.Errorf("%s: request %s is queued, but applying it failed: %w", e.title, path, err)
	}
	out, err := requests.NoteOutcome(dir, r.ID, e.euid)
	if err != nil {
		return nil, path, fmt.Errorf("%s: %w", e.title, err)
	}
	return &out, path, nil
}

// submit files this user's note request (action on n) and says so when
// it waits for gpuacct serve; it returns the writer's outcome, nil when
// the request waits, and the writer's refusal as the error.
func (e *env) submit(ctx context.Context, d Deps, action string, n *requests.Note, what string) (*requests.Request, error) {
	r := &requests.Request{Action: action, Note: n, Cluster: e.cfg.Cluster.Name, By: d.Username(), UID: e.euid, Time: e.now.UTC()}
	r.Host, _ = os.Hostname()
	out, path, err := e.file(ctx, r)
	if err != nil {
		return nil, err
	}
	if out == nil {
		return nil, queued(d.Stdout, what, path)
	}
	return out, refused(e.title, out)
}

// queued is the line printed when a request waits for gpuacct serve.
func queued(w io.Writer, what, path string) error {
	_, err := fmt.Fprintf(w, "%s: request %s queued; gpuacct serve applies it on its next pass (ingest.interval)\n", what, path)
	return err
}

// refused is a request the writer refused, as the one line to print.
func refused(title string, out *requests.Request) error {
	if out.Error == "" {
		return nil
	}
	return fmt.Errorf("%s: %s", title, strings.TrimPrefix(out.Error, "refused: "))
}
