package notecmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/cliwire"
	"github.com/aicloud/gpusuite/internal/ignorereq"
	"github.com/aicloud/gpusuite/internal/notes"
)

func listCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the active notes, and the requests serve has not applied yet",
		UsageText: `gpuacct note list [--all] [--format table|json]

Without --all: the notes active now and the pending requests, by node and
GPU. With --all: every note kept (expired and removed too) and every
refused request, newest first, with a STATUS column.

Examples:
   gpuacct note list
   gpuacct note list --all --format json`,
		Flags: append(commonFlags(),
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "every note and refused request, not only the active ones"},
			&cli.StringFlag{Name: "format", Usage: "table or json", Value: "table"},
		),
		Action: cliwire.Interspersed(func(c *cli.Context) error {
			args := c.Args().Slice()
			const title = "note list"
			if len(args) > 0 {
				return cliwire.Usagef("%s: takes no arguments (see 'gpuacct note list --help')", title)
			}
			format := strings.ToLower(c.String("format"))
			if format != "table" && format != "json" {
				return cliwire.Usagef("%s: --format %q is not table or json", title, c.String("format"))
			}
			e, err := load(c, d, title)
			if err != nil {
				return err
			}
			st, err := e.reader(c.Context)
			if err != nil {
				return fmt.Errorf("%s: %w", title, err)
			}
			kept, err := st.Notes(c.Context, e.now, c.Bool("all"))
			st.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", title, err)
			}
			reqs, err := ignorereq.ListNotes(e.cfg.Report.Requests, d.LookupUser)
			if err != nil {
				return fmt.Errorf("%s: %w", title, err)
			}
			rows := notes.Rows(kept, reqs, e.now, c.Bool("all"))
			if format == "json" {
				return notes.WriteJSON(d.Stdout, rows, e.now, c.Bool("all"))
			}
			if err := notes.WriteTable(d.Stdout, rows, e.loc, c.Bool("all")); err != nil {
				return err
			}
			if reqs.Hidden {
				_, err = fmt.Fprintln(d.Stdout, "Requests not yet applied are not listed: only root and the service user may read the queue; gpuacct serve applies them on its next pass.")
			}
			return err
		}),
	}
}
