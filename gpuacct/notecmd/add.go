package notecmd

import (
	"fmt"
	"strconv"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/notes"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/requests"
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
