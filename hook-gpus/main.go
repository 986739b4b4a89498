// Command hook-gpus answers a prolog or epilog for its job's GPUs when the
// node's agent does not. The hooks are static binaries that link no NVML
// (no dynamic loader at every job start); this small one, beside them in
// /usr/libexec/gpusuite, opens NVML for them.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/cli/buildinfo"
	"github.com/aicloud/gpusuite/internal/cli/exitcode"
	"github.com/aicloud/gpusuite/internal/hookgpus"
)

func main() { os.Exit(run(os.Args, os.Stdin, os.Stdout, os.Stderr)) }

// run is the whole program: exit Usage for a bad command line, Failure for
// a request it cannot read or answer (an NVML that cannot be opened is an
// answer).
func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	name := agentproto.HelperName
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported in one line below
	version := fs.Bool("version", false, "print the version and exit")
	err := fs.Parse(args[1:])
	switch {
	case errors.Is(err, flag.ErrHelp):
		usage(fs, stderr)
		return exitcode.OK
	case err != nil:
		fmt.Fprintf(stderr, "%s: %v (run '%s --help')\n", name, err, name)
		return exitcode.Usage
	case *version:
		fmt.Fprintln(stdout, buildinfo.Print(name))
		return exitcode.OK
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "%s: takes no arguments, it reads its request on standard input (run '%s --help')\n", name, name)
		return exitcode.Usage
	}
	if err := hookgpus.Serve(context.Background(), stdin, stdout, hookgpus.OpenConfigured); err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", name, err)
		return exitcode.Failure
	}
	return exitcode.OK
}

func usage(fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, `%[1]s - answer a Slurm prolog or epilog for its job's GPUs when the agent does not

Usage: %[1]s < REQUEST

The prolog and epilog (static binaries without NVML) run the %[1]s beside
them when the node agent's hook socket does not answer. It reads one JSON
request on standard input (the config's [gpu] table, the node, the NVML
timeout, the job's device minors), opens NVML, and prints one JSON line:
each GPU's UUID, model and energy counter, as the agent answers a hook.

Example, the question a prolog on a node without its agent asks:
   echo '{"gpu":{"Backend":"nvml"},"node":"gpu01","nvml_timeout":"500ms","minors":[0,1]}' | %[1]s

Options:
`, agentproto.HelperName)
	fs.SetOutput(w)
	fs.PrintDefaults()
}
