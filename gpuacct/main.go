// Command gpuacct is part of gpusuite; see README.md.
package main

import (
	"fmt"
	"os"
)

func main() { os.Exit(run(os.Args, os.Stderr)) }

func run(args []string, stderr *os.File) int {
	fmt.Fprintf(stderr, "%s: not built yet\n", args[0])
	return 2
}
