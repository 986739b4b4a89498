package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/spool"
)

const openSegmentName = "segment.open"

// segment is the raw-sample file being written, in the state directory
// until it is closed and spooled.
type segment struct {
	f   *os.File
	w   *bufio.Writer
	hdr record.SegmentHeader
	n   int
	buf bytes.Buffer
}

func (a *Agent) openSegment(start time.Time) error {
	s, err := a.newSegment(openSegmentName, record.SegmentHeader{
		Schema: record.SegmentSchema, Key: record.SegmentKey(a.cluster, a.node, a.nextSeq),
		Cluster: a.cluster, Node: a.node, Seq: a.nextSeq,
		Interval: a.interval.Seconds(), Start: start.UTC(),
	})
	if err != nil {
		return err
	}
	a.seg = s
	// profile segments opened while this one is take the numbers after it
	a.extraSeq = a.nextSeq + 1
	return nil
}

// newSegment creates the open segment file name in the state directory
// and writes its header, with the chosen metrics and what the GPUs cannot
// give of them.
func (a *Agent) newSegment(name string, hdr record.SegmentHeader) (*segment, error) {
	if len(a.metricNames) > 0 {
		hdr.Metrics, hdr.Unsupported = a.metricNames, a.unsupported()
	}
	p := filepath.Join(a.stateDir, name)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_TRUNC|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open segment %q: %w", p, err)
	}
	s := &segment{f: f, w: bufio.NewWriterSize(f, 64<<10), hdr: hdr}
	line, _ := json.Marshal(s.hdr)
	s.w.Write(append(line, '\n'))
	if err := s.w.Flush(); err != nil {
		f.Close()
		return nil, fmt.Errorf("write segment %q: %w", p, err)
	}
	return s, nil
}

// read flushes and closes the segment and returns its bytes.
func (s *segment) read() ([]byte, error) {
	if err := s.w.Flush(); err != nil {
		return nil, fmt.Errorf("flush segment: %w", err)
	}
	s.f.Close()
	data, err := os.ReadFile(s.f.Name())
	if err != nil {
		return nil, fmt.Errorf("read segment: %w", err)
	}
	return data, nil
}

// append writes samples to the open segment. They reach the kernel (a
// write per cycle) so a killed agent loses none; fsync is left to the
// roll, as a power cut losing the last minutes of raw samples is accepted.
func (s *segment) append(samples []record.Sample) error {
	enc := json.NewEncoder(&s.buf)
	for i := range samples {
		s.buf.Reset()
		if err := enc.Encode(&samples[i]); err != nil {
			return fmt.Errorf("encode sample: %w", err)
		}
		s.w.Write(s.buf.Bytes())
		s.n++
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("write segment: %w", err)
	}
	return nil
}

// recoverSegment finishes a segment a killed agent left open: complete
// lines are kept, a torn last line dropped, its samples folded into the
// aggregates (which the checkpoint has only up to the last roll), and the
// segment spooled under its own sequence number.
func (a *Agent) recoverSegment() error {
	if err := a.recoverOpen(openSegmentName); err != nil {
		return err
	}
	// profile segments were opened after it, with the numbers after its
	profiles, _ := filepath.Glob(filepath.Join(a.stateDir, profileOpenGlob))
	sort.Strings(profiles)
	for _, p := range profiles {
		if err := a.recoverOpen(filepath.Base(p)); err != nil {
			return err
		}
	}
	return nil
}

// recoverOpen recovers one open segment file of the state directory.
func (a *Agent) recoverOpen(name string) error {
	p := filepath.Join(a.stateDir, name)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read open segment %q: %w", p, err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	} else {
		data = nil
	}
	lines := bytes.Split(bytes.TrimSuffix(data, []byte("\n")), []byte("\n"))
	var hdr record.SegmentHeader
	if len(data) == 0 || json.Unmarshal(lines[0], &hdr) != nil || hdr.Schema != record.SegmentSchema {
		a.log.Warn("open segment left by a crash has no valid header; dropping it", "file", p)
		return os.Remove(p)
	}
	if hdr.Seq < a.nextSeq {
		// spooled before the crash, only its removal was lost
		return os.Remove(p)
	}
	var samples []record.Sample
	for _, l := range lines[1:] {
		var s record.Sample
		if err := json.Unmarshal(l, &s); err != nil {
			break
		}
		samples = append(samples, s)
	}
	for i := range samples {
		a.foldSample(&samples[i], hdr.Interval)
	}
	a.nextSeq = hdr.Seq
	a.log.Info("recovered segment left open by an unclean stop", "seq", hdr.Seq, "samples", len(samples), "profile", hdr.Profile != nil)
	return a.finishSegment(segPart{data, hdr.Seq, len(samples), name})
}

// unsupported is what the segment header says the GPUs cannot give of
// the chosen metrics.
func (a *Agent) unsupported() map[string][]string {
	var m map[string][]string
	for _, d := range a.devs {
		if u := d.Unsupported(); len(u) > 0 {
			if m == nil {
				m = map[string][]string{}
			}
			m[d.UUID] = u
		}
	}
	return m
}

func (a *Agent) foldSample(s *record.Sample, interval float64) {
	s = a.withParentEnergy(s)
	model := ""
	for _, d := range a.devs {
		if d.UUID == s.UUID {
			model = d.Model
		}
	}
	fold(a.aggs, s, interval, a.cluster, a.node, func(job uint64, restart int) *Alloc {
		return a.allocs[jobKey(job, restart)]
	}, model)
}

// roll closes the open segment, spools it with the aggregates that changed,
// checkpoints, and starts the next segment. Crash-safe at every step: each
// spool name is deterministic (a repeat finds it taken) and the checkpoint
// is written after what it accounts for.
func (a *Agent) roll(next time.Time) error {
	if err := a.closeSegment(); err != nil {
		return err
	}
	return a.openSegment(next)
}

// closeSegment finishes the open segment and the profile segments open
// beside it (or, with none open, the aggregates and checkpoint alone);
// roll and Stop share it.
func (a *Agent) closeSegment() error {
	parts := []segPart{{nil, a.nextSeq, 0, openSegmentName}}
	if a.seg != nil {
		data, err := a.seg.read()
		if err != nil {
			return err
		}
		parts[0].data, parts[0].n = data, a.seg.n
		a.seg = nil
	}
	more, err := a.closeProfileSegments()
	if err != nil {
		return err
	}
	return a.finishSegment(append(parts, more...)...)
}

// segPart is one closed segment to spool: its bytes, number, samples and
// open file in the state directory.
type segPart struct {
	data []byte
	seq  uint64
	n    int
	open string
}

// finishSegment spools the segments that hold samples, then the
// aggregates, then checkpoints with nextSeq past the highest number, then
// removes the open files.
func (a *Agent) finishSegment(parts ...segPart) error {
	last := parts[0].seq
	for _, p := range parts {
		last = max(last, p.seq)
		if p.n == 0 {
			continue
		}
		name := record.SegmentFileName(a.cluster, a.node, p.seq)
		if err := a.spool.Write(name, p.data); err != nil && !errors.Is(err, spool.ErrExists) {
			return fmt.Errorf("spool segment: %w", err)
		}
		a.metrics.segments.Inc()
	}
	if err := a.emitAggregates(last); err != nil {
		return err
	}
	a.nextSeq = last + 1
	a.dirty = false
	a.prune()
	if err := a.saveCheckpoint(); err != nil {
		return err
	}
	for _, p := range parts {
		if err := os.Remove(filepath.Join(a.stateDir, p.open)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove open segment: %w", err)
		}
	}
	a.trimSpool()
	return nil
}

// emitAggregates spools every aggregate that changed (and every ended
// one, as final), and drops the version it supersedes from the spool if
// it was not shipped yet. An aggregate without a sample (a job shorter
// than the interval) is not spooled: it would cover no time, which
// ingest refuses, and the job's events carry its allocation.
func (a *Agent) emitAggregates(seq uint64) error {
	for _, k := range sortedKeys(a.aggs) {
		g := a.aggs[k]
		if g.Samples == 0 {
			if g.Ended {
				delete(a.aggs, k)
			}
			continue
		}
		if g.Samples == g.Emitted && !g.Ended {
			continue
		}
		rec := g.record(seq)
		data, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("encode aggregate %s: %w", g.Key, err)
		}
		name := record.JobGPUFileName(a.cluster, g.Job, g.RestartCount, a.node, g.UUID, seq)
		if err := a.spool.Write(name, data); err != nil && !errors.Is(err, spool.ErrExists) {
			return fmt.Errorf("spool aggregate %s: %w", g.Key, err)
		}
		if g.LastFile != "" && g.LastFile != name {
			_ = os.Remove(filepath.Join(a.spool.Path, g.LastFile)) // superseded; gone if shipped
		}
		g.LastFile = name
		g.Emitted = g.Samples
		if g.Ended {
			delete(a.aggs, k)
		}
	}
	return nil
}
