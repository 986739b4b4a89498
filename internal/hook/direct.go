package hook

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/aicloud/gpusuite/internal/agentproto"
	"github.com/aicloud/gpusuite/internal/boundcmd"
)

// helperMargin is how long before the hook stops waiting the helper must
// have answered: its answer and exit, and the hook's reading of it.
const helperMargin = 50 * time.Millisecond

// helperPath is agentproto.HelperName beside the running hook: the hooks
// are static binaries (no dynamic loader at every job start) and link no
// NVML.
func helperPath() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find %s beside this hook: %w", agentproto.HelperName, err)
	}
	return filepath.Join(filepath.Dir(exe), agentproto.HelperName), nil
}

// askHelper runs the helper at path with req, within ctx: a helper still
// running at ctx's end is killed, and the hook records device minors only.
func askHelper(ctx context.Context, path string, req agentproto.Direct) (agentproto.Response, error) {
	var resp agentproto.Response
	in, err := json.Marshal(req)
	if err != nil {
		return resp, fmt.Errorf("encode request for %s: %w", path, err)
	}
	cmd := exec.CommandContext(ctx, path)
	cmd.Stdin = bytes.NewReader(in)
	// a helper's child holding the pipes open must not outlast the bound
	cmd.WaitDelay = 100 * time.Millisecond
	out, line, err := boundcmd.Output(ctx, cmd, agentproto.MaxMessage)
	switch {
	case errors.Is(err, boundcmd.ErrTooLarge):
		return resp, fmt.Errorf("%s: answer longer than %d bytes", path, agentproto.MaxMessage)
	case err != nil && errors.Is(err, ctx.Err()):
		return resp, fmt.Errorf("%s: timed out: %w", path, err)
	case err != nil && line != "":
		return resp, fmt.Errorf("%s: %w: %s", path, err, line)
	case err != nil:
		return resp, fmt.Errorf("%s: %w", path, err)
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		return resp, fmt.Errorf("%s: bad answer: %w", path, err)
	}
	return resp, nil
}
