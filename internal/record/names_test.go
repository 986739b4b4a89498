package record

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestFileNames holds every built name to the protocol the nodes already
// speak, and each one to the kind a reader tells from it.
func TestFileNames(t *testing.T) {
	type told struct {
		Kind      FileKind
		Event     Kind
		IsEventOK bool
	}
	for _, tc := range []struct {
		name, built, want string
		told              told
	}{
		{"start", EventFileName("c1", 42, 1, "gpu01", JobStart), "event.c1.42.1.gpu01.job_start.json", told{FileEvent, JobStart, true}},
		{"end", EventFileName("c.x", 42, 0, "gpu-01.a", JobEnd), "event.c.x.42.0.gpu-01.a.job_end.json", told{FileEvent, JobEnd, true}},
		{"segment", SegmentFileName("c1", "gpu01", 7), "samples.c1.gpu01.0000000000000007.jsonl", told{FileSegment, "", false}},
		{"aggregate", JobGPUFileName("c1", 42, 1, "gpu01", "GPU-a", 3), "jobgpu.c1.42.1.gpu01.GPU-a.0000000000000003.json", told{FileJobGPU, "", false}},
		{"gpu event", GPUEventFileName("c1", "gpu01", "GPU-a", time.Unix(1772600767, 890000000), GPUXid, 79, ""),
			"gpuevent.c1.gpu01.GPU-a.1772600767890000000.xid.79.json", told{FileGPUEvent, "", false}},
		{"throttle event", GPUEventFileName("c1", "gpu01", "GPU-a", time.Unix(1, 0), GPUThrottleStart, 0, ThrottlePower),
			"gpuevent.c1.gpu01.GPU-a.0000000001000000000.throttle_start.0.power.json", told{FileGPUEvent, "", false}},
		{"other", ".tmp.event.c1.json", ".tmp.event.c1.json", told{FileOther, "", false}},
		{"event of no kind", "event.garbage.json", "event.garbage.json", told{FileEvent, "", false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.built != tc.want {
				t.Errorf("built %q, want %q", tc.built, tc.want)
			}
			k, ok := EventKindOfFile(tc.built)
			got := told{KindOfFile(tc.built), k, ok}
			if d := cmp.Diff(tc.told, got); d != "" {
				t.Errorf("told from %q (-want +got):\n%s", tc.built, d)
			}
		})
	}
}

// TestFileRecordKey: the key a name says is the key of the record the
// agent writes under it, and a name it would not write says none.
func TestFileRecordKey(t *testing.T) {
	for _, tc := range []struct {
		name, node, file string
		kind             FileKind
		key              string
	}{
		{"start", "gpu01", EventFileName("c1", 42, 1, "gpu01", JobStart), FileEvent, EventKey("c1", 42, 1, "gpu01", JobStart)},
		{"dots in cluster and node", "gpu-01.a", EventFileName("c.x", 42, 0, "gpu-01.a", JobEnd), FileEvent, EventKey("c.x", 42, 0, "gpu-01.a", JobEnd)},
		{"segment", "gpu01", SegmentFileName("c1", "gpu01", 7), FileSegment, SegmentKey("c1", "gpu01", 7)},
		{"segment with dots", "n.1", SegmentFileName("c.x", "n.1", 12345), FileSegment, SegmentKey("c.x", "n.1", 12345)},
		{"another node's event", "gpu02", EventFileName("c1", 42, 1, "gpu01", JobStart), "", ""},
		{"another node's segment", "gpu02", SegmentFileName("c1", "gpu01", 7), "", ""},
		{"event of no kind", "gpu01", "event.c1.42.1.gpu01.json", "", ""},
		{"job id not a number", "gpu01", "event.c1.x42.1.gpu01.job_start.json", "", ""},
		{"no cluster", "gpu01", "event.42.1.gpu01.job_start.json", "", ""},
		{"padded job id", "gpu01", "event.c1.042.1.gpu01.job_start.json", "", ""},
		{"unpadded sequence", "gpu01", "samples.c1.gpu01.7.jsonl", "", ""},
		{"segment of no cluster", "gpu01", "samples.gpu01.0000000000000007.jsonl", "", ""},
		{"aggregate", "gpu01", JobGPUFileName("c1", 42, 1, "gpu01", "GPU-a", 3), "", ""},
		{"gpu event", "gpu01", GPUEventFileName("c1", "gpu01", "GPU-a", time.Unix(1, 0), GPUXid, 79, ""), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kind, key, ok := FileRecordKey(tc.node, tc.file)
			if ok != (tc.key != "") || kind != tc.kind || key != tc.key {
				t.Errorf("FileRecordKey(%q, %q) = %q, %q, %v; want %q, %q", tc.node, tc.file, kind, key, ok, tc.kind, tc.key)
			}
		})
	}
}
