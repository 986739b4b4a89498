// Package board is the live cluster board: it joins each node's live
// snapshot (record.Live, written by the node's agent) with Slurm's view
// (slurmstate.State) into one state per GPU, for gpuacct free, gpuacct
// status and the web board. It reads files and takes plain values; it
// runs nothing.
package board

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// Bounds of one Load.
const (
	// DefaultMaxFiles is how many snapshot files one Load reads (one per
	// node: far above any cluster here).
	DefaultMaxFiles = 10_000
	// DefaultMaxFileBytes bounds one snapshot; a node of 8 GPUs writes a
	// few KiB, so a larger file is not the agent's.
	DefaultMaxFileBytes = 1 << 20
	// MaxSkew is how far in the future a snapshot's time may be (clocks
	// differ a little); later than that it is refused, so a wrong clock
	// cannot keep a node looking fresh.
	MaxSkew = 5 * time.Minute
	// MaxInterval bounds a snapshot's interval, so a wrong one cannot keep
	// a silent node fresh for long.
	MaxInterval = time.Hour
	// maxListedFactor bounds the directory entries looked at, json or not.
	maxListedFactor = 4
)

// Limits bound Load; zero fields take the defaults.
type Limits struct {
	MaxFiles     int
	MaxFileBytes int64
}

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	return l
}

// Problem is a file Load skipped, or the directory it could not read
// (File empty), and why.
type Problem struct {
	File string
	Err  string
}

func (p Problem) String() string {
	if p.File == "" {
		return p.Err
	}
	return p.File + ": " + p.Err
}

// Load reads the snapshots <dir>/*.json, at most lim.MaxFiles of them,
// each at most lim.MaxFileBytes, regular files only (never through a
// link, never blocking on a FIFO). A file is taken only when its name is
// record.LiveFileName of the node it names: a node speaks only for
// itself. The snapshots come sorted by node; every file skipped is a
// Problem.
func Load(dir string, now time.Time, lim Limits) ([]record.Live, []Problem) {
	lim = lim.withDefaults()
	names, probs := list(dir, lim.MaxFiles)
	var lives []record.Live
	for _, name := range names {
		l, err := readLive(dir, name, lim.MaxFileBytes, now)
		if err != nil {
			probs = append(probs, Problem{File: name, Err: err.Error()})
			continue
		}
		lives = append(lives, l)
	}
	sort.Slice(lives, func(i, j int) bool { return lives[i].Node < lives[j].Node })
	return lives, probs
}

// LoadNode reads node's own snapshot, <dir>/record.LiveFileName(node),
// with Load's checks: what a question about one node needs, without
// reading every node's file.
func LoadNode(dir, node string, now time.Time, lim Limits) (record.Live, error) {
	if node == "" || strings.ContainsRune(node, '/') {
		return record.Live{}, fmt.Errorf("node %q: not a node name", node)
	}
	lim = lim.withDefaults()
	return readLive(dir, record.LiveFileName(node), lim.MaxFileBytes, now)
}

// list returns up to max *.json names of dir, sorted, reading the
// directory in bounded batches.
func list(dir string, max int) ([]string, []Problem) {
	d, err := os.Open(dir)
	if err != nil {
		return nil, []Problem{{Err: fmt.Sprintf("open live directory %q (is the share mounted? set board.live_dir or --live-dir): %v", dir, err)}}
	}
	defer d.Close()
	var names []string
	var probs []Problem
	seen := 0
	for {
		ents, err := d.ReadDir(256)
		for _, e := range ents {
			seen++
			if !strings.HasSuffix(e.Name(), ".json") || strings.HasPrefix(e.Name(), ".") {
				continue // the agent's temporary files
			}
			if len(names) == max {
				return sorted(names), append(probs, Problem{Err: fmt.Sprintf("live directory %q holds more than %d snapshots; the rest are not read", dir, max)})
			}
			names = append(names, e.Name())
		}
		if seen > max*maxListedFactor {
			return sorted(names), append(probs, Problem{Err: fmt.Sprintf("live directory %q holds more than %d entries; the rest are not read", dir, max*maxListedFactor)})
		}
		if errors.Is(err, io.EOF) || (err == nil && len(ents) == 0) {
			return sorted(names), probs
		}
		if err != nil {
			return sorted(names), append(probs, Problem{Err: fmt.Sprintf("read live directory %q: %v", dir, err)})
		}
	}
}

func sorted(s []string) []string { sort.Strings(s); return s }

// readLive opens dir/name without following a link or blocking, and
// decodes it if it is a regular file within max bytes.
func readLive(dir, name string, max int64, now time.Time) (record.Live, error) {
	f, err := os.OpenFile(dir+"/"+name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return record.Live{}, errors.New("is a symbolic link; the agent writes plain files")
		}
		return record.Live{}, fmt.Errorf("open: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return record.Live{}, fmt.Errorf("stat: %w", err)
	}
	if !st.Mode().IsRegular() {
		return record.Live{}, fmt.Errorf("is not a regular file (%s)", st.Mode().Type())
	}
	if st.Size() > max {
		return record.Live{}, fmt.Errorf("is %d bytes, more than the %d a snapshot may be", st.Size(), max)
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return record.Live{}, fmt.Errorf("read: %w", err)
	}
	if int64(len(data)) > max {
		return record.Live{}, fmt.Errorf("grew past the %d bytes a snapshot may be", max)
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
