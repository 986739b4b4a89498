// Package migratecmd is the command line of gpuacct migrate: it copies a
// ledger from one engine to another (SQLite and PostgreSQL, either way)
// with internal/store's Copy, so that a site moves without losing its
// history.
package migratecmd

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/store"
)

// Deps is what the command takes from the process; tests set each.
type Deps struct {
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// System is Deps for the real process.
func System(stdout, stderr io.Writer, getenv func(string) string) Deps {
	return Deps{Stdout: stdout, Stderr: stderr, Getenv: getenv}
}

// Command is `gpuacct migrate`.
func Command(d Deps) *cli.Command {
	return &cli.Command{
		Name:  "migrate",
		Usage: "copy the ledger to another engine (SQLite ↔ PostgreSQL), resumable, and verify every row of the copy",
		UsageText: `gpuacct migrate --from LEDGER --to LEDGER [--batch ROWS] [--verify-only]

A LEDGER is sqlite:PATH, a plain PATH (SQLite), or postgres://USER:PASSWORD@HOST/DB.
The destination must be empty (a new file, or a database made with CREATE
DATABASE) or a copy of the same source that was interrupted: run the same
command again and it goes on after the last batch it committed.

Stop gpuacct serve and ingest on the source first: migrate holds the
source's writer lock (its lock file, or PostgreSQL's advisory lock) for
the whole copy and its verification, and refuses to start while a writer
holds it; a writer started meanwhile waits (serve, ingest --wait) or
refuses (ingest).

At the end it compares the two ledgers, table by table: the row counts;
the totals of alloc_gpu_s, used_gpu_s, idle_gpu_s and energy_mj over the
jobs, job hours and rollups, and of energy_delta_mj over the samples; and
every row, read from both sides in key order (each value compared as
text: NULL apart from '', reals to the last bit). It fails naming each
table that differs and its figures or the first key whose rows differ.
The copy's own progress marks (meta keys migrate.*) are not compared.
--verify-only runs this comparison alone. Then point store.url (or
store.path) of the configuration at the destination.

Examples:
  gpuacct migrate --from /var/lib/gpusuite/acct.db --to postgres://gpusuite@db1/gpusuite
  gpuacct migrate --from sqlite:/var/lib/gpusuite/acct.db --to sqlite:/srv/acct-copy.db --batch 50000
  gpuacct migrate --from /var/lib/gpusuite/acct.db --to postgres://gpusuite@db1/gpusuite --verify-only`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "from", Usage: "the ledger to copy (default: the configuration's store.url, else store.path)", EnvVars: []string{"GPUSUITE_MIGRATE_FROM"}},
			&cli.StringFlag{Name: "to", Usage: "the ledger to copy into (required)", EnvVars: []string{"GPUSUITE_MIGRATE_TO"}},
			&cli.IntFlag{Name: "batch", Value: store.DefaultCopyBatch, Usage: fmt.Sprintf("rows per transaction, 1 to %d", store.MaxCopyBatch), EnvVars: []string{"GPUSUITE_MIGRATE_BATCH"}},
			&cli.BoolFlag{Name: "verify-only", Usage: "copy nothing: compare the two ledgers' row counts, totals and every row", EnvVars: []string{"GPUSUITE_MIGRATE_VERIFY_ONLY"}},
		},
		Action: func(c *cli.Context) error {
			if c.Args().Len() > 0 {
				return cliwire.Usagef("migrate: unexpected argument %q (see 'gpuacct migrate --help')", c.Args().First())
			}
			// The ledgers as resolved (--from may come from the
			// configuration): their passwords never show.
			urls := []string{c.String("from"), c.String("to")}
			err := run(c, d, &urls)
			var ue *cliwire.UsageError
			if err == nil || errors.As(err, &ue) {
				return err
			}
			return &cliwire.ExitError{Code: exitcode.Failure, Err: errors.New(hidePasswords(err.Error(), urls...))}
		},
	}
}

// ledger is where one side of the copy lives.
type ledger struct {
	opts store.Options
	// name is how messages show it: the path, or the URL without its
	// password.
	name string
}

// parseLedger reads --from or --to.
func parseLedger(flag, v string) (ledger, error) {
	switch {
	case v == "":
		return ledger{}, cliwire.Usagef("migrate: --%s is empty: give sqlite:PATH, PATH or postgres://USER@HOST/DB", flag)
	case store.IsPostgresURL(v):
		if _, err := url.Parse(v); err != nil {
			// Not shown: a URL that does not parse cannot have its password
			// hidden.
			return ledger{}, cliwire.Usagef("migrate: --%s is not a URL (postgres://USER:PASSWORD@HOST/DB): %v", flag, errors.Unwrap(err))
		}
		return ledger{opts: store.Options{URL: v}, name: store.RedactURL(v)}, nil
	}
	path, isSQLite := strings.CutPrefix(v, "sqlite:")
	if !isSQLite && strings.Contains(v, "://") {
		scheme, _, _ := strings.Cut(v, "://")
		return ledger{}, cliwire.Usagef("migrate: --%s %q: a ledger is sqlite:PATH, PATH or postgres://…, not %s://", flag, store.RedactURL(v), scheme)
	}
	if path == "" {
		return ledger{}, cliwire.Usagef("migrate: --%s %q names no file: give sqlite:PATH", flag, v)
	}
	// The copy records its source by name: the same file must have the
	// same name from any directory, so that a rerun resumes.
	abs, err := filepath.Abs(path)
	if err != nil {
		return ledger{}, fmt.Errorf("migrate: --%s %q: %w", flag, path, err)
	}
	return ledger{opts: store.Options{Path: abs}, name: abs}, nil
}

// hidePasswords blanks the passwords of the given URLs in msg, whatever
// a driver's message quoted.
func hidePasswords(msg string, urls ...string) string {
	for _, u := range urls {
		p, err := url.Parse(u)
		if err != nil || p.User == nil {
			continue
		}
		if pw, ok := p.User.Password(); ok && pw != "" {
			msg = strings.ReplaceAll(msg, pw, "xxxxx")
		}
	}
	return msg
}

func run(c *cli.Context, d Deps, urls *[]string) error {
	cfg, err := cliwire.LoadConfig(c, d.Getenv)
	if err != nil {
		return err
	}
	from := c.String("from")
	if !c.IsSet("from") {
		from = cfg.Store.Location()
	}
	*urls = append(*urls, from)
	if from == "" {
		return cliwire.Usagef("migrate: no ledger to copy: give --from (or store.url/store.path in the configuration)")
	}
	if !c.IsSet("to") {
		return cliwire.Usagef("migrate: --to is required: the ledger to copy into (sqlite:PATH or postgres://USER@HOST/DB)")
	}
	src, err := parseLedger("from", from)
	if err != nil {
		return err
	}
	dst, err := parseLedger("to", c.String("to"))
	if err != nil {
		return err
	}
	if src.name == dst.name {
		return cliwire.Usagef("migrate: --from and --to are the same ledger (%s)", src.name)
	}
	batch := c.Int("batch")
	if batch < 1 || batch > store.MaxCopyBatch {
		return cliwire.Usagef("migrate: --batch %d: give 1 to %d rows", batch, store.MaxCopyBatch)
	}
	busy := cfg.Store.BusyTimeout.Duration
	verifyOnly := c.Bool("verify-only")

	// A reader: Copy and Verify take the source's writer lock themselves,
	// for as long as they run.
	so := src.opts
	so.ReadOnly, so.BusyTimeout = true, busy
	in, err := store.Open(c.Context, so)
	if err != nil {
		return fmt.Errorf("migrate: source: %w", err)
	}
	defer in.Close()
	do := dst.opts
	do.ReadOnly, do.BusyTimeout = verifyOnly, busy
	if dst.opts.Path != "" {
		do.Journal = cfg.Store.JournalMode
	}
	out, err := store.Open(c.Context, do)
	if err != nil {
		return fmt.Errorf("migrate: destination: %w", err)
	}
	defer out.Close()

	if verifyOnly {
		tables, err := store.Verify(c.Context, in, out)
		if err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
		return writeResult(d.Stdout, src.name, dst.name, store.CopyResult{Tables: tables}, true)
	}
	// The first line waits for the first batch, so that a refusal is
	// the only line a refused copy prints.
	started := false
	res, err := store.Copy(c.Context, in, out, store.CopyOptions{Batch: batch, Progress: func(p store.CopyProgress) {
		if !started {
			fmt.Fprintf(d.Stderr, "migrate: copying %s to %s, %d rows a batch\n", src.name, dst.name, batch)
			started = true
		}
		if p.Done {
			fmt.Fprintf(d.Stderr, "migrate: %s: done, %d rows\n", p.Table, p.Rows)
		} else {
			fmt.Fprintf(d.Stderr, "migrate: %s: %d rows\n", p.Table, p.Rows)
		}
	}})
	if err != nil && started {
		return fmt.Errorf("migrate: %w (run the same command again to resume)", err)
	}
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := out.Close(); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return writeResult(d.Stdout, src.name, dst.name, res, false)
}

// writeResult prints the tables copied and verified.
func writeResult(w io.Writer, from, to string, res store.CopyResult, verifyOnly bool) error {
	t := &table.Table{
		Title: fmt.Sprintf("%s → %s", from, to),
		Columns: []table.Column{
			{Key: "table", Title: "TABLE"},
			{Key: "copied", Title: "COPIED", Kind: table.Int},
			{Key: "rows", Title: "ROWS", Kind: table.Int},
			{Key: "verified", Title: "VERIFIED"},
		},
	}
	var copied, rows int64
	for _, tc := range res.Tables {
		var n any = tc.Copied
		if verifyOnly {
			n = nil
		}
		t.Rows = append(t.Rows, table.Row{Cells: []any{tc.Table, n, tc.Rows, "ok"}})
		copied += tc.Copied
		rows += tc.Rows
	}
	switch {
	case verifyOnly:
		t.Notes = append(t.Notes, fmt.Sprintf("%d tables, %d rows: row counts and totals agree, and every row reads the same (nothing copied)", len(res.Tables), rows))
	case res.Resumed && copied == 0:
		t.Notes = append(t.Notes, fmt.Sprintf("%d tables, %d rows, all copied before: row counts and totals agree, and every row reads the same", len(res.Tables), rows))
	case res.Resumed:
		t.Notes = append(t.Notes, fmt.Sprintf("%d tables, %d rows, %d copied by this run (it resumed an earlier one): row counts and totals agree, and every row reads the same", len(res.Tables), rows, copied))
	default:
		t.Notes = append(t.Notes, fmt.Sprintf("%d tables, %d rows copied: row counts and totals agree, and every row reads the same", len(res.Tables), rows))
	}
	if err := table.Write(w, t, table.Options{Format: table.Aligned}); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
