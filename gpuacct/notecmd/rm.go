package notecmd

import (
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

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
