package record

import (
	"fmt"
	"time"
)

// GPUEventSchema is the schema of GPU error and throttling events.
const GPUEventSchema = "gpusuite.gpuevent/v1"

// GPUEventKind says what happened to a GPU.
type GPUEventKind string

// GPU event kinds.
const (
	// GPUXid is an Xid error the driver reported; Code is its number.
	GPUXid GPUEventKind = "xid"
	// GPUECCSingle and GPUECCDouble are corrected and uncorrected ECC
	// errors the driver reported.
	GPUECCSingle GPUEventKind = "ecc_single"
	GPUECCDouble GPUEventKind = "ecc_double"
	// GPUThrottleStart and GPUThrottleEnd are a clock slowdown starting
	// and ending; Reason says which (power, thermal, hw_slowdown).
	GPUThrottleStart GPUEventKind = "throttle_start"
	GPUThrottleEnd   GPUEventKind = "throttle_end"
)

// Throttle reasons of GPUThrottleStart and GPUThrottleEnd.
const (
	ThrottlePower      = "power"
	ThrottleThermal    = "thermal"
	ThrottleHWSlowdown = "hw_slowdown"
)

// GPUEvent is one error or throttling change of one GPU, with the jobs
// holding the GPU at that moment.
type GPUEvent struct {
	Schema  string       `json:"schema"`
	Key     string       `json:"key"`
	Kind    GPUEventKind `json:"kind"`
	Time    time.Time    `json:"time"`
	Cluster string       `json:"cluster"`
	Node    string       `json:"node"`
	UUID    string       `json:"uuid"`
	Index   int          `json:"index"`
	// Code is the Xid number, or the driver's event data for ECC events
	// (0 when it gives none).
	Code uint64 `json:"code"`
	// Reason is a throttle event's reason.
	Reason string `json:"reason,omitempty"`
	// Jobs are the jobs allocated the GPU at Time; empty when none.
	Jobs []JobRef `json:"jobs,omitempty"`
	// Suppressed counts events of this GPU not written since the last
	// record because they came faster than the agent writes them (a storm);
	// they are still counted in the agent's /metrics.
	Suppressed uint64 `json:"suppressed,omitempty"`
}

// JobRef names one run of a job.
type JobRef struct {
	Job     uint64 `json:"job"`
	Restart int    `json:"restart"`
}

// GPUEventKey is the deterministic key of a GPU event.
func GPUEventKey(cluster, node, uuid string, t time.Time, kind GPUEventKind, code uint64, reason string) string {
	return fmt.Sprintf("%s/%s/%s/%d/%s/%d%s", cluster, node, uuid, t.UnixNano(), kind, code, reasonPart("/", reason))
}

// GPUEventFileName is the spool and incoming file name of a GPU event.
func GPUEventFileName(cluster, node, uuid string, t time.Time, kind GPUEventKind, code uint64, reason string) string {
	return fmt.Sprintf(gpuEventPrefix+"%s.%s.%s.%019d.%s.%d%s.json", cluster, node, uuid, t.UnixNano(), kind, code, reasonPart(".", reason))
}

func reasonPart(sep, reason string) string {
	if reason == "" {
		return ""
	}
	return sep + reason
}
