// Command nfs-sync makes same-second updates on the shared NFS /data
// visible on every server; see docs/nfs.md.
package main

import (
	"os"
)

func main() { os.Exit(run(os.Args, os.Stdout, os.Stderr, os.Getenv)) }

func run(args []string, stdout, stderr *os.File, getenv func(string) string) int {
	return Main(args, stdout, stderr, getenv)
}
