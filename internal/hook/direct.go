package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/agent/hookclient"
)

// helperMargin is how long before the hook stops waiting the helper must
// have answered: its answer and exit, and the hook's reading of it.
const helperMargin = 50 * time.Millisecond

// helperPath is hookclient.HelperName beside the running hook: the hooks
// are static binaries (no dynamic loader at every job start) and link no
// NVML.
func helperPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find %s beside this hook: %w", hookclient.HelperName, err)
	}
	return filepath.Join(filepath.Dir(exe), hookclient.HelperName), nil
}

// askHelper runs the helper at path with req, within ctx: a helper still
// running at ctx's end is killed, and the hook records device minors only.
func askHelper(ctx context.Context, path string, req hookclient.Direct) (hookclient.Response, error) {
	var resp hookclient.Response
	in, err := json.Marshal(req)
	if err != nil {
		return resp, fmt.Errorf("encode request for %s: %w", path, err)
	}
	cmd := exec.CommandContext(ctx, path)
	cmd.Stdin = bytes.NewReader(in)
	out := &capped{max: hookclient.MaxMessage}
	errOut := &capped{max: 2048}
	cmd.Stdout, cmd.Stderr = out, errOut
	// a helper's child holding the pipes open must not outlast the bound
	cmd.WaitDelay = 100 * time.Millisecond
	err = cmd.Run()
	if err != nil && ctx.Err() != nil {
		return resp, fmt.Errorf("%s: timed out: %w", path, ctx.Err())
	}
	if err != nil {
		msg := strings.TrimSpace(errOut.buf.String())
		if msg != "" {
			return resp, fmt.Errorf("%s: %w: %s", path, err, msg)
		}
		return resp, fmt.Errorf("%s: %w", path, err)
	}
	if out.over {
		return resp, fmt.Errorf("%s: answer longer than %d bytes", path, hookclient.MaxMessage)
	}
	if err := json.Unmarshal(out.buf.Bytes(), &resp); err != nil {
		return resp, fmt.Errorf("%s: bad answer: %w", path, err)
	}
	return resp, nil
}

// capped keeps at most max bytes of what is written to it and says
// whether more came; it never fails a write, so the helper is not stopped
// by a full pipe. (A named buffer, not an embedded one: io.Copy would take
// bytes.Buffer's ReadFrom and skip the cap.)
type capped struct {
	buf  bytes.Buffer
	max  int
	over bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.buf.Len(); len(p) > room {
		c.over = true
		if room > 0 {
			c.buf.Write(p[:room])
		}
		return len(p), nil
	}
	return c.buf.Write(p)
}
