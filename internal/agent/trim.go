package agent

import (
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aicloud/gpusuite/internal/record"
)

// trimSpool keeps the spool under agent.spool_max_bytes by dropping raw
// sample segments, oldest first. Events and aggregates are never dropped.
func (a *Agent) trimSpool() {
	entries, err := os.ReadDir(a.spool.Path)
	if err != nil {
		a.log.Warn("cannot list spool", "err", err)
		return
	}
	var total int64
	var segs []fs.DirEntry
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if info, err := e.Info(); err == nil {
			total += info.Size()
		}
		if record.KindOfFile(e.Name()) == record.FileSegment {
			segs = append(segs, e)
		}
	}
	for _, e := range segs { // names sort by sequence number
		if total <= a.cfg.SpoolMaxBytes {
			return
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		if err := os.Remove(filepath.Join(a.spool.Path, e.Name())); err != nil {
			continue
		}
		total -= info.Size()
		a.metrics.dropped.Inc()
		a.log.Warn("spool full: dropped the oldest raw sample segment", "file", e.Name(), "bytes", info.Size(), "limit", a.cfg.SpoolMaxBytes)
	}
}
