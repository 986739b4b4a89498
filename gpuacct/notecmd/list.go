package notecmd

import (
	"fmt"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/notes"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

// scope resolves -M and --all-clusters against known, the ledger's
// clusters: the local one by default, every one when it is not among
// them. A bad choice is a usage error of one line.
func (e *env) scope(c *cli.Context, known []string) (report.Scope, error) {
	local := e.getenv("SLURM_CLUSTER_NAME")
	if local == "" {
		local = e.cfg.Cluster.Name
	}
	var ask []string
	for _, v := range c.StringSlice("clusters") {
		for _, p := range strings.Split(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				ask = append(ask, p)
			}
		}
	}
	where := e.cfg.Store.Path
	if e.cfg.Store.URL != "" {
		where = store.RedactURL(e.cfg.Store.URL)
	}
	s, err := report.ResolveScope(where, known, report.ScopeRequest{Ask: ask, Given: c.IsSet("clusters"), All: c.Bool("all-clusters"),
		Local: local, DefaultAll: true})
	if err != nil {
		return s, cliwire.Usagef("%s: %v", e.title, err)
	}
	return s, nil
}

func listCommand(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "list",
		Usage: "list the active notes, and the requests serve has not applied yet",
		UsageText: `gpuacct note list [--all] [-M NAME[,NAME] | --all-clusters] [--format table|json]

Without --all: the notes active now and the pending requests, by node and
GPU. With --all: every note kept (expired and removed too) and every
refused request, newest first, with a STATUS column.

When several clusters share the ledger it lists the local cluster's notes
(SLURM_CLUSTER_NAME, else cluster.name), or every cluster's when the
local one is not among them; -M and --all-clusters choose, and over
several clusters a CLUSTER column leads.

Examples:
   gpuacct note list
   gpuacct note list --all --format json
   gpuacct note list --all-clusters`,
		Flags: append(commonFlags(),
			&cli.BoolFlag{Name: "all", Aliases: []string{"a"}, Usage: "every note and refused request, not only the active ones"},
			&cli.StringFlag{Name: "format", Usage: "table or json", Value: "table"},
			&cli.StringSliceFlag{Name: "clusters", Aliases: []string{"M"}, Usage: "the notes of these clusters of the ledger (comma-separated; all: every one). Default: the local one when the ledger holds it, else every one"},
			&cli.BoolFlag{Name: "all-clusters", Usage: "the notes of every cluster of the ledger (-M all), with a CLUSTER column"},
		),
		Action: func(c *cli.Context) error {
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
			var nodes []store.NodeRow
			if err == nil {
				nodes, err = st.Nodes(c.Context)
			}
			st.Close()
			if err != nil {
				return fmt.Errorf("%s: %w", title, err)
			}
			reqs, err := requests.ListNotes(e.cfg.Report.Requests, d.LookupUser)
			if err != nil {
				return fmt.Errorf("%s: %w", title, err)
			}
			rows := notes.Rows(kept, reqs, e.now, c.Bool("all"))
			scope, err := e.scope(c, notes.Known(nodes, rows))
			if err != nil {
				return err
			}
			rows = notes.InScope(rows, scope)
			if format == "json" {
				return notes.WriteJSON(d.Stdout, rows, e.now, c.Bool("all"))
			}
			if err := notes.WriteTable(d.Stdout, rows, e.loc, c.Bool("all"), scope.Several()); err != nil {
				return err
			}
			if reqs.Hidden {
				_, err = fmt.Fprintln(d.Stdout, "Requests not yet applied are not listed: only root and the service user may read the queue; gpuacct serve applies them on its next pass.")
			}
			return err
		},
	}
}
