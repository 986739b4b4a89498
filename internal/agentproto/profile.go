package agentproto

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// The profile socket: `gpuacct profile` asks the agent on this node to
// sample one job's GPUs at a short interval for a while. The agent checks
// who asks (SO_PEERCRED): root or the job's owner.

// MaxProfileMessage bounds one request or answer line.
const MaxProfileMessage = 64 << 10

// MinProfileInterval is the shortest profile interval; a profile's interval
// is a whole number of it.
const MinProfileInterval = 100 * time.Millisecond

// ProfileRequest asks for one profile.
type ProfileRequest struct {
	Job uint64 `json:"job"`
	// IntervalMS is the sampling interval in milliseconds.
	IntervalMS int64 `json:"interval_ms"`
	// ForMS is how long the profile lasts, in milliseconds.
	ForMS int64 `json:"for_ms"`
}

// ProfileResponse is the agent's answer: the profile it will run, or why
// not.
type ProfileResponse struct {
	Job     uint64 `json:"job,omitempty"`
	Restart int    `json:"restart,omitempty"`
	// GPUs are the UUIDs of the job's GPUs on this node that it samples.
	GPUs []string `json:"gpus,omitempty"`
	// Start is when sampling at the short interval begins (the agent's next
	// cycle); End when it ends and the normal interval takes over again.
	Start time.Time `json:"start,omitzero"`
	End   time.Time `json:"end,omitzero"`
	Error string    `json:"error,omitempty"`
}

// AskProfile sends req to the agent's profile socket at path, all within
// timeout.
func AskProfile(ctx context.Context, path string, timeout time.Duration, req ProfileRequest) (ProfileResponse, error) {
	var resp ProfileResponse
	if err := Exchange(ctx, path, timeout, MaxProfileMessage, req, &resp); err != nil {
		if errors.Is(err, ErrConnect) {
			return resp, fmt.Errorf("agent profile socket %q: %w (is gpuacct agent running on this node with agent.profile_socket set?)", path, err)
		}
		return resp, fmt.Errorf("agent profile socket %q: %w", path, err)
	}
	if resp.Error != "" {
		return resp, fmt.Errorf("%w: %s", ErrRefused, resp.Error)
	}
	return resp, nil
}
