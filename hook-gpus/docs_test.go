package main

import (
	"bytes"
	"flag"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

var update = flag.Bool("update", false, "rewrite packaging/man/hook-gpus.1 from --help")

// TestManPage keeps packaging/man/hook-gpus.1 the program's own --help.
func TestManPage(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run([]string{"hook-gpus", "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("--help: exit %d", code)
	}
	cmdline.Golden(t, "../packaging/man/hook-gpus.1", cmdline.ManFromHelp("hook-gpus", errb.String()), *update)
}
