// Package board is the live cluster board: it joins each node's live
// snapshot (record.Live, written by the node's agent) with Slurm's view
// (slurmstate.State) into one state per GPU, for gpuacct free, gpuacct
// status and the web board. It reads files and takes plain values (notes
// come as Note, never from the store); it runs nothing.
//
// Files: load.go the live directory (one file per node, read through
// internal/live); board.go the states, IsFree (the one definition of a
// free GPU) and the totals; view.go the View that the web page, the JSON
// documents and the text of free and status are all rendered from;
// doc.go the JSON documents (status, free, notes); source.go the board
// served, rebuilt at most once per MaxAge; alerts.go and metrics.go what
// gpuacct check and /metrics say of it.
package board

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/live"
	"github.com/aicloud/gpusuite/internal/record"
)

// Bounds of one Load.
const (
	// DefaultMaxFiles is how many snapshot files one Load reads (one per
	// node: far above any cluster here).
	DefaultMaxFiles = 10_000
	// DefaultMaxFileBytes bounds one snapshot (live.MaxBytes).
	DefaultMaxFileBytes = live.MaxBytes
	// MaxSkew and MaxInterval bound a snapshot's time and interval
	// (live.Read).
	MaxSkew     = live.MaxSkew
	MaxInterval = live.MaxInterval
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
type Problem struct{ File, Err string }

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
		l, err := live.Read(dir, name, lim.MaxFileBytes, now)
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
	lim = lim.withDefaults()
	return live.ReadNode(dir, node, lim.MaxFileBytes, now)
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
