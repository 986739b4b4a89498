// Package logging builds the *slog.Logger every gpusuite binary uses: the
// systemd journal when the process runs under it, stderr otherwise.
package logging

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/coreos/go-systemd/v22/journal"
)

// ParseLevel maps debug, info, warn and error to a slog.Level.
func ParseLevel(s string) (slog.Level, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(s)); err != nil {
		return slog.LevelInfo, fmt.Errorf("log level %q is not debug, info, warn or error", s)
	}
	return l, nil
}

// New returns a logger for program. Under systemd (JOURNAL_STREAM set and
// the journal socket reachable) records go to the journal with their
// attributes as fields; otherwise they go to w as text.
func New(program string, w io.Writer, level slog.Level, getenv func(string) string) *slog.Logger {
	if getenv("JOURNAL_STREAM") != "" && journal.Enabled() {
		return slog.New(&journalHandler{level: level, ident: program})
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level})).With("prog", program)
}

// Stderr is New with os.Stderr and os.Getenv.
func Stderr(program string, level slog.Level) *slog.Logger {
	return New(program, os.Stderr, level, os.Getenv)
}

type journalHandler struct {
	level slog.Level
	ident string
	attrs []slog.Attr
	group string
}

func (h *journalHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level }

func (h *journalHandler) Handle(_ context.Context, r slog.Record) error {
	vars := map[string]string{"SYSLOG_IDENTIFIER": h.ident}
	add := func(a slog.Attr) {
		key := strings.ToUpper(strings.NewReplacer(".", "_", "-", "_").Replace(h.group + a.Key))
		vars[key] = a.Value.String()
	}
	for _, a := range h.attrs {
		add(a)
	}
	msg := r.Message
	r.Attrs(func(a slog.Attr) bool {
		add(a)
		msg += " " + a.Key + "=" + a.Value.String()
		return true
	})
	return journal.Send(msg, priority(r.Level), vars)
}

func (h *journalHandler) WithAttrs(as []slog.Attr) slog.Handler {
	n := *h
	n.attrs = append(append([]slog.Attr{}, h.attrs...), as...)
	return &n
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	n := *h
	n.group = h.group + name + "_"
	return &n
}

func priority(l slog.Level) journal.Priority {
	switch {
	case l >= slog.LevelError:
		return journal.PriErr
	case l >= slog.LevelWarn:
		return journal.PriWarning
	case l >= slog.LevelInfo:
		return journal.PriInfo
	default:
		return journal.PriDebug
	}
}
