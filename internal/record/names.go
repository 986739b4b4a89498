package record

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// The spool file-name protocol: a file's name says what it holds, so the
// agent ships and ingest reads in order (events, aggregates, segments)
// without opening a file. Every name is built and told apart here.
const (
	eventPrefix   = "event."
	jobGPUPrefix  = "jobgpu."
	segmentPrefix = "samples."
	// gpuEventPrefix does not start with eventPrefix: a GPU event is not
	// a job event.
	gpuEventPrefix = "gpuevent."
)

// FileKind is what a spool or incoming file holds, told by its name. Its
// value names it in logs and metrics.
type FileKind string

// File kinds.
const (
	FileEvent   FileKind = "event"
	FileJobGPU  FileKind = "jobgpu"
	FileSegment FileKind = "samples"
	// FileGPUEvent is a GPU error or throttling event (GPUEvent).
	FileGPUEvent FileKind = "gpuevent"
	FileOther    FileKind = "other"
)

// KindOfFile says what the file named name holds.
func KindOfFile(name string) FileKind {
	switch {
	case strings.HasPrefix(name, eventPrefix):
		return FileEvent
	case strings.HasPrefix(name, jobGPUPrefix):
		return FileJobGPU
	case strings.HasPrefix(name, segmentPrefix):
		return FileSegment
	case strings.HasPrefix(name, gpuEventPrefix):
		return FileGPUEvent
	default:
		return FileOther
	}
}

// EventKindOfFile says which end of a job the event file named name
// records; ok is false for a name that is not an event's.
func EventKindOfFile(name string) (kind Kind, ok bool) {
	if !strings.HasPrefix(name, eventPrefix) {
		return "", false
	}
	for _, k := range []Kind{JobStart, JobEnd} {
		if strings.HasSuffix(name, "."+string(k)+".json") {
			return k, true
		}
	}
	return "", false
}

// EventFileName is the spool file name for an event key.
func EventFileName(cluster string, jobID uint64, restart int, node string, kind Kind) string {
	return fmt.Sprintf(eventPrefix+"%s.%d.%d.%s.%s.json", cluster, jobID, restart, node, kind)
}

// SegmentFileName is the spool and incoming file name of a segment. The
// zero-padded sequence makes names sort in the order they were written.
func SegmentFileName(cluster, node string, seq uint64) string {
	return fmt.Sprintf(segmentPrefix+"%s.%s.%016d.jsonl", cluster, node, seq)
}

// JobGPUFileName is the file name of one version (seq) of an aggregate.
func JobGPUFileName(cluster string, job uint64, restart int, node, uuid string, seq uint64) string {
	return fmt.Sprintf(jobGPUPrefix+"%s.%d.%d.%s.%s.%016d.json", cluster, job, restart, node, uuid, seq)
}

// LiveFileName is the name of a node's live-state file in the live
// directory; the node's agent is its one writer.
func LiveFileName(node string) string {
	return node + ".json"
}

// FileRecordKey is the key of the record a file in node's directory holds,
// as its name says: an event's (EventKey) or a segment's (SegmentKey).
// ok is false for other kinds and for a name the agent would not have
// written for node. The name is not the record: a reader that must know
// the key reads it from the content; this one is for asking about many
// files' keys before they are read.
func FileRecordKey(node, name string) (kind FileKind, key string, ok bool) {
	switch KindOfFile(name) {
	case FileEvent:
		k, ok := EventKindOfFile(name)
		if !ok {
			return "", "", false
		}
		rest := strings.TrimSuffix(strings.TrimPrefix(name, eventPrefix), "."+string(k)+".json")
		rest, ok = strings.CutSuffix(rest, "."+node)
		if !ok {
			return "", "", false
		}
		// rest is cluster.job.restart, the cluster maybe with dots.
		rest, restart, ok1 := cutLastNumber(rest)
		cluster, job, ok2 := cutLastNumber(rest)
		if !ok1 || !ok2 || cluster == "" || restart > math.MaxInt32 {
			return "", "", false
		}
		if EventFileName(cluster, job, int(restart), node, k) != name {
			return "", "", false
		}
		return FileEvent, EventKey(cluster, job, int(restart), node, k), true
	case FileSegment:
		rest, ok := strings.CutSuffix(strings.TrimPrefix(name, segmentPrefix), ".jsonl")
		if !ok {
			return "", "", false
		}
		rest, seq, ok := cutLastNumber(rest)
		if !ok {
			return "", "", false
		}
		cluster, ok := strings.CutSuffix(rest, "."+node)
		if !ok || cluster == "" || SegmentFileName(cluster, node, seq) != name {
			return "", "", false
		}
		return FileSegment, SegmentKey(cluster, node, seq), true
	}
	return "", "", false
}

// cutLastNumber splits "a.b.12" into "a.b" and 12.
func cutLastNumber(s string) (string, uint64, bool) {
	i := strings.LastIndexByte(s, '.')
	if i < 0 {
		return "", 0, false
	}
	n, err := strconv.ParseUint(s[i+1:], 10, 64)
	if err != nil {
		return "", 0, false
	}
	return s[:i], n, true
}
