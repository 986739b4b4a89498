package record

import (
	"fmt"
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
