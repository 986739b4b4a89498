// Package live reads the agents' live snapshots (record.Live, one file
// per node under board.live_dir): one file, bounded, never through a
// link or blocking on a FIFO, and only a snapshot that speaks for its own
// node. The board reads every node's (internal/board); the writer's note
// requests read one node's (internal/requests), without the board.
package live

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/spool"
)

const (
	// MaxBytes is the most a snapshot may be: a node of 8 GPUs writes a
	// few KiB, so a larger file is not the agent's.
	MaxBytes = 1 << 20
	// MaxSkew is how far in the future a snapshot's time may be (clocks
	// differ a little); later than that it is refused, so a wrong clock
	// cannot keep a node looking fresh.
	MaxSkew = 5 * time.Minute
	// MaxInterval bounds a snapshot's interval, so a wrong one cannot keep
	// a silent node fresh for long.
	MaxInterval = time.Hour
)

// ReadNode reads node's own snapshot, <dir>/record.LiveFileName(node),
// within max bytes, with Read's checks.
func ReadNode(dir, node string, max int64, now time.Time) (record.Live, error) {
	if node == "" || strings.ContainsRune(node, '/') {
		return record.Live{}, fmt.Errorf("node %q: not a node name", node)
	}
	return Read(dir, record.LiveFileName(node), max, now)
}

// Read opens dir/name without following a link or blocking, and decodes
// it if it is a regular file within max bytes: a snapshot of the node it
// names (its name is record.LiveFileName of that node), dated at most
// MaxSkew ahead of now, with an interval of at most MaxInterval.
func Read(dir, name string, max int64, now time.Time) (record.Live, error) {
	data, st, err := spool.ReadRegular(dir+"/"+name, max)
	var op *fs.PathError
	switch {
	case errors.Is(err, syscall.ELOOP):
		return record.Live{}, errors.New("is a symbolic link; the agent writes plain files")
	case errors.Is(err, spool.ErrNotRegular):
		return record.Live{}, fmt.Errorf("is not a regular file (%s)", st.Mode().Type())
	case errors.Is(err, spool.ErrTooLarge):
		return record.Live{}, fmt.Errorf("is %d bytes, more than the %d a snapshot may be", st.Size(), max)
	case errors.Is(err, spool.ErrGrew):
		return record.Live{}, fmt.Errorf("grew past the %d bytes a snapshot may be", max)
	case errors.As(err, &op):
		// os names the step that failed: open, stat or read.
		return record.Live{}, fmt.Errorf("%s: %w", op.Op, err)
	case err != nil:
		return record.Live{}, fmt.Errorf("read: %w", err)
	}
	var l record.Live
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return record.Live{}, fmt.Errorf("not a live snapshot: %w", err)
	}
	switch {
	case l.Schema != record.LiveSchema:
		return record.Live{}, fmt.Errorf("schema %q, want %q", clip(l.Schema), record.LiveSchema)
	case l.Node == "":
		return record.Live{}, errors.New("names no node")
	case record.LiveFileName(l.Node) != name:
		return record.Live{}, fmt.Errorf("speaks for node %q but a node writes only %s", clip(l.Node), record.LiveFileName(l.Node))
	case l.Time.IsZero():
		return record.Live{}, errors.New("has no time")
	case l.Time.After(now.Add(MaxSkew)):
		return record.Live{}, fmt.Errorf("is dated %s, more than %s ahead of this clock: check the node's clock", l.Time.UTC().Format(time.RFC3339), MaxSkew)
	case !(l.Interval > 0) || l.Interval > MaxInterval.Seconds():
		return record.Live{}, fmt.Errorf("interval %v is not a number of seconds from 0 to %v", l.Interval, MaxInterval.Seconds())
	}
	return l, nil
}

func clip(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}
