// Package hookcli is the command line of the prolog and epilog. It uses the
// standard library's flag package, not urfave/cli as the other binaries do:
// slurmd starts a hook at every job start, and urfave/cli's documentation
// machinery (blackfriday, go-md2man) alone cost each start a third of a
// millisecond of package init and megabytes of binary.
package hookcli

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/aicloud/gpusuite/internal/cli/buildinfo"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/hook"
	"github.com/aicloud/gpusuite/internal/record"
)

// EnvSpoolDir overrides spool.dir, below --spool-dir.
const EnvSpoolDir = "GPUSUITE_SPOOL_DIR"

// slurmNames gives, per kind, the slurm.conf parameter and what is recorded.
var slurmNames = map[record.Kind][2]string{
	record.JobStart: {"Prolog", "start"},
	record.JobEnd:   {"Epilog", "end"},
}

// Main is the whole prolog or epilog program. A bad command line is logged
// and exits 0 like every other accounting error: a failing prolog drains
// the node.
func Main(kind record.Kind, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	name := hook.Name(kind)
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line below
	var o hook.Options
	fs.StringVar(&o.Config, "config", "", "config file (default $"+config.EnvPath+", else "+config.DefaultPath+")")
	spoolDir := fs.String("spool-dir", "", "node-local spool directory (spool.dir; default $"+EnvSpoolDir+")")
	version := fs.Bool("version", false, "print the version and exit")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(fs, kind, stderr)
			return exitcode.OK
		}
		fmt.Fprintf(stderr, "%s: %v (run '%s --help'); nothing recorded\n", name, err, name)
		return exitcode.OK
	}
	if *version {
		fmt.Fprintln(stdout, buildinfo.Print(name))
		return exitcode.OK
	}
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == "spool-dir" })
	switch {
	case set:
		o.SpoolDir, o.SpoolDirSet = *spoolDir, true
	case getenv(EnvSpoolDir) != "":
		o.SpoolDir, o.SpoolDirSet = getenv(EnvSpoolDir), true
	}
	return hook.Exec(kind, o, stderr, getenv)
}

func usage(fs *flag.FlagSet, kind record.Kind, w io.Writer) {
	name, n := hook.Name(kind), slurmNames[kind]
	fmt.Fprintf(w, `%[1]s - Slurm %[2]s hook: record the job's %[3]s and its GPUs in the node-local spool

Usage: %[1]s [--config FILE] [--spool-dir DIR]

Set in slurm.conf (slurmd runs it as root with the job's SLURM_* variables):
   %[2]s=/usr/libexec/gpusuite/%[1]s
   PrologFlags=Alloc

Exits 0 on every accounting error (a failing prolog would drain the node) and
logs it with the job id; the only non-zero exit is the opt-in health check
(hooks.health_check).

Example, what slurmd does, by hand, to see what would be recorded:
   SLURM_JOB_ID=42 SLURM_JOB_USER=alice SLURM_JOB_UID=1000 SLURMD_NODENAME=gpu01 \
     SLURM_JOB_GPUS=0,1 %[1]s --config /etc/gpusuite/gpusuite.toml

Options:
`, name, n[0], n[1])
	fs.SetOutput(w)
	fs.PrintDefaults()
}
