// Command prolog is gpusuite's Slurm Prolog hook: it records the job's GPUs in
// the node-local spool and never fails the job over accounting.
package main

import (
	"os"

	"github.com/aicloud/gpusuite/internal/cli/hookcli"
	"github.com/aicloud/gpusuite/internal/record"
)

func main() { os.Exit(hookcli.Main(record.JobStart, os.Args, os.Stdout, os.Stderr, os.Getenv)) }
