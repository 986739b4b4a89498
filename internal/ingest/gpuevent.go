package ingest

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	"github.com/aicloud/gpusuite/internal/record"
)

// maxXid bounds an Xid number: NVIDIA's run to a few hundred; more is
// garbage, not a driver's report.
const maxXid = 1 << 16

// gpuEvent validates a GPU event (gpusuite.gpuevent/v1): the node's own,
// named and keyed as its content says, a kind, code and reason that go
// together, a time not in the future.
func (v Validator) gpuEvent(node, name string, data []byte) (*Parsed, error) {
	var ev record.GPUEvent
	if err := strict(bytes.TrimSpace(data), &ev); err != nil {
		return nil, bad("gpu event: %s", shorten(err.Error()))
	}
	if err := checkName("gpu event cluster", ev.Cluster, nodeRE, true); err != nil {
		return nil, err
	}
	if ev.Node != node {
		return nil, bad("gpu event of node %q found in the directory of node %q", shorten(ev.Node), node)
	}
	if !uuidRE.MatchString(ev.UUID) {
		return nil, bad("gpu event: GPU UUID %q is malformed", shorten(ev.UUID))
	}
	if ev.Index < 0 || ev.Index >= maxGPUsPerNode {
		return nil, bad("gpu event: GPU index %d out of range", ev.Index)
	}
	switch ev.Kind {
	case record.GPUXid:
		if ev.Code == 0 || ev.Code > maxXid {
			return nil, bad("gpu event: Xid %d out of range (1..%d)", ev.Code, maxXid)
		}
	case record.GPUECCSingle, record.GPUECCDouble:
		if ev.Code > maxStored {
			return nil, bad("gpu event: ECC data %d out of range", ev.Code)
		}
	case record.GPUThrottleStart, record.GPUThrottleEnd:
		if ev.Code != 0 {
			return nil, bad("gpu event: %s with code %d (throttling has none)", ev.Kind, ev.Code)
		}
		switch ev.Reason {
		case record.ThrottlePower, record.ThrottleThermal, record.ThrottleHWSlowdown:
		default:
			return nil, bad("gpu event: throttle reason %q is not %s, %s or %s", shorten(ev.Reason),
				record.ThrottlePower, record.ThrottleThermal, record.ThrottleHWSlowdown)
		}
	default:
		return nil, bad("gpu event: kind %q is not %s, %s, %s, %s or %s", shorten(string(ev.Kind)),
			record.GPUXid, record.GPUECCSingle, record.GPUECCDouble, record.GPUThrottleStart, record.GPUThrottleEnd)
	}
	if ev.Reason != "" && ev.Kind != record.GPUThrottleStart && ev.Kind != record.GPUThrottleEnd {
		return nil, bad("gpu event: %s with a reason (only throttling has one)", ev.Kind)
	}
	if err := v.checkTime("gpu event time", ev.Time); err != nil {
		return nil, err
	}
	if want := record.GPUEventKey(ev.Cluster, ev.Node, ev.UUID, ev.Time, ev.Kind, ev.Code, ev.Reason); ev.Key != want {
		return nil, bad("gpu event key %q does not match its content (%q)", shorten(ev.Key), want)
	}
	if want := record.GPUEventFileName(ev.Cluster, ev.Node, ev.UUID, ev.Time, ev.Kind, ev.Code, ev.Reason); name != want {
		return nil, bad("gpu event file name %q does not match its key (%q)", name, want)
	}
	if len(ev.Jobs) > maxJobsPerGPU {
		return nil, bad("gpu event: %d jobs on one GPU (at most %d)", len(ev.Jobs), maxJobsPerGPU)
	}
	for _, j := range ev.Jobs {
		if !jobOK(j.Job, j.Restart) {
			return nil, bad("gpu event: job %d restart %d out of range (job 1..%d, restart 0..%d)", j.Job, j.Restart, uint64(maxJobID), maxRestart)
		}
	}
	if ev.Suppressed > maxStored {
		return nil, bad("gpu event: suppressed %d out of range", ev.Suppressed)
	}
	canon, err := json.Marshal(&ev)
	if err != nil {
		return nil, bad("gpu event: %s", shorten(err.Error()))
	}
	sum := sha256.Sum256(canon)
	return &Parsed{GPUEvent: &ev, ContentHash: hex.EncodeToString(sum[:])}, nil
}
