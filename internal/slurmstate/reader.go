package slurmstate

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/boundcmd"
)

// Bounds of one Read.
const (
	// DefaultTimeout is the whole Read's time (both commands) when
	// Reader.Timeout is zero.
	DefaultTimeout = 10 * time.Second
	// MaxOutput is the most one command may print (a cluster of 10,000
	// nodes prints about 15 MB less than this).
	MaxOutput = 16 << 20
)

// Reader reads Slurm's state through scontrol.
type Reader struct {
	// Run runs a command and returns its stdout (Exec{}.Run when nil).
	// Read returns at the deadline even if Run does not.
	Run func(ctx context.Context, name string, args ...string) ([]byte, error)
	// Timeout bounds the whole Read (DefaultTimeout when zero).
	Timeout time.Duration
	// Location is slurmctld's zone, in which scontrol prints times
	// (time.Local when nil).
	Location *time.Location
	// Now stamps State.At (time.Now when nil).
	Now func() time.Time
}

// bounded is ctx under the reader's timeout (DefaultTimeout unless set)
// and the zone Slurm's times are read in (Local unless set).
func (r Reader) bounded(ctx context.Context) (context.Context, context.CancelFunc, *time.Location) {
	timeout := r.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	loc := r.Location
	if loc == nil {
		loc = time.Local
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	return ctx, cancel, loc
}

// Read runs scontrol show node and show reservation and parses both.
// An unreachable slurmctld is an error that says so, with scontrol's
// own words.
func (r Reader) Read(ctx context.Context) (State, error) {
	ctx, cancel, loc := r.bounded(ctx)
	defer cancel()
	out, err := r.run(ctx, "scontrol", "show", "node", "--oneliner")
	if err != nil {
		return State{}, fmt.Errorf("read slurm nodes: %w", err)
	}
	nodes, err := ParseNodes(out, loc)
	if err != nil {
		return State{}, err
	}
	out, err = r.run(ctx, "scontrol", "show", "reservation", "--oneliner")
	if err != nil {
		return State{}, fmt.Errorf("read slurm reservations: %w", err)
	}
	res, err := ParseReservations(out, loc)
	if err != nil {
		return State{}, err
	}
	return State{Nodes: nodes, Reservations: res, At: r.now()}, nil
}

// now is the reader's clock: Now, else time.Now.
func (r Reader) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// run calls Run, but returns at ctx's end whatever Run does, and
// refuses more than MaxOutput.
func (r Reader) run(ctx context.Context, name string, args ...string) ([]byte, error) {
	run := r.Run
	if run == nil {
		run = Exec{}.Run
	}
	type result struct {
		out []byte
		err error
	}
	done := make(chan result, 1) // buffered: a late Run does not block forever
	go func() {
		out, err := run(ctx, name, args...)
		done <- result{out, err}
	}()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("%s: no answer in time: %w", CommandLine(name, args), ctx.Err())
	case res := <-done:
		if res.err != nil {
			return nil, res.err
		}
		if len(res.out) > MaxOutput {
			return nil, fmt.Errorf("%s: printed more than %d bytes", CommandLine(name, args), MaxOutput)
		}
		return res.out, nil
	}
}

// maxArgShown is how much of one argument an error quotes.
const maxArgShown = 60

// CommandLine is name and args as an error quotes them: a long argument
// (sacct's -j list of 500 jobs) is cut, with how many items it held, so
// that a failure stays one readable log line.
func CommandLine(name string, args []string) string {
	var b strings.Builder
	b.WriteString(name)
	for _, a := range args {
		b.WriteByte(' ')
		if len(a) <= maxArgShown {
			b.WriteString(a)
			continue
		}
		cut := a[:maxArgShown]
		if i := strings.LastIndexByte(cut, ','); i > 0 {
			fmt.Fprintf(&b, "%s,… (%d items, %d bytes)", cut[:i], strings.Count(a, ",")+1, len(a))
			continue
		}
		fmt.Fprintf(&b, "%s… (%d bytes)", cut, len(a))
	}
	return strings.TrimSpace(b.String())
}

// Exec runs commands as processes.
type Exec struct {
	// Env is the commands' environment (this process's when nil), e.g.
	// with SLURM_CONF.
	Env []string
	// MaxOutput bounds stdout (the package's MaxOutput when zero).
	MaxOutput int
}

// Run runs the command until ctx ends and returns its stdout. A
// failure carries the first line of stderr (scontrol's "Unable to
// contact slurm controller").
func (e Exec) Run(ctx context.Context, name string, args ...string) ([]byte, error) {
	limit := e.MaxOutput
	if limit <= 0 {
		limit = MaxOutput
	}
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = e.Env
	out, line, err := boundcmd.Output(ctx, cmd, limit)
	what := CommandLine(name, args)
	switch {
	case errors.Is(err, boundcmd.ErrTooLarge):
		return nil, fmt.Errorf("%s: printed more than %d bytes", what, limit)
	case err != nil && errors.Is(err, ctx.Err()):
		return nil, fmt.Errorf("%s: no answer in time: %w", what, err)
	case err != nil && line != "":
		return nil, fmt.Errorf("%s: %s: %w", what, line, err)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}
