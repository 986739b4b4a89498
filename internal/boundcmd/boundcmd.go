// Package boundcmd runs a command within a context and bounds what it
// prints: the Slurm commands the board reads and the hook-gpus a hook asks
// share it. It imports nothing but the standard library, so the static
// hooks may link it.
package boundcmd

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strings"
)

// ErrTooLarge is a command that printed more than it may.
var ErrTooLarge = errors.New("output too large")

// maxStderr keeps the bit of a command's complaint an error carries.
const maxStderr = 4 << 10

// Output runs cmd, made with exec.CommandContext(ctx, ...) so that ctx's
// end kills it, and returns at most maxOut bytes of its standard output
// and the first line of its standard error. A command that prints more is
// cut off and the error is ErrTooLarge; one that fails after ctx ended
// gets ctx's error, and one that answered in time is taken even if ctx
// ended as it exited. cmd.WaitDelay, when the caller left it zero, is
// one second: a child that keeps the pipes open must not hold it longer.
func Output(ctx context.Context, cmd *exec.Cmd, maxOut int) (out []byte, stderrLine string, err error) {
	stdout := &capped{max: maxOut}
	stderr := &capped{max: maxStderr, quiet: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 1e9
	}
	err = cmd.Run()
	line := firstLine(stderr.buf.String())
	switch {
	case stdout.over:
		return nil, line, ErrTooLarge
	case err != nil && ctx.Err() != nil:
		return nil, line, ctx.Err()
	case err != nil:
		return nil, line, err
	}
	return stdout.buf.Bytes(), line, nil
}

// capped keeps at most max bytes. Past that, stdout fails the write (the
// command is then cut off); stderr (quiet) just drops the rest. A named
// buffer, not an embedded one: io.Copy would take bytes.Buffer's ReadFrom
// and skip the cap.
type capped struct {
	buf   bytes.Buffer
	max   int
	over  bool
	quiet bool
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if len(p) <= room {
		return c.buf.Write(p)
	}
	c.buf.Write(p[:max(room, 0)])
	if c.quiet {
		return len(p), nil
	}
	c.over = true
	return 0, ErrTooLarge
}

// firstLine is s's first line, at most 200 bytes.
func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	if len(line) > 200 {
		line = line[:200] + "..."
	}
	return line
}
