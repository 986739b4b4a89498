// Package record defines the versioned, self-describing records that flow
// from the nodes to the accounting store (docs/records.md).
//
// Files: event.go (job events), job.go (the job, exit and GPU types
// events carry), sample.go (segments: header, samples, profiles),
// sampledec.go (the fast sample decoder that agrees with encoding/json),
// metrics.go (the metric catalogue and sets), gpuevent.go (Xid, ECC and
// throttling events), live.go (the live-state file), names.go (spool file
// names: build one, tell its kind).
package record

import (
	"fmt"
	"time"
)

// EventSchema is the schema of job start/end events. A reader refuses a
// schema it does not know rather than guess.
const EventSchema = "gpusuite.event/v1"

// Kind says which end of a job an event records.
type Kind string

// Event kinds.
const (
	JobStart Kind = "job_start"
	JobEnd   Kind = "job_end"
)

// Event is one job start or end on one node.
type Event struct {
	Schema string    `json:"schema"`
	Key    string    `json:"key"`
	Kind   Kind      `json:"kind"`
	Time   time.Time `json:"time"`
	// Source is the program that wrote the event (prolog, epilog).
	Source  string `json:"source"`
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	Job     Job    `json:"job"`
	GPUs    []GPU  `json:"gpus"`
	// Quality lists what is known to be missing or wrong in this event,
	// e.g. "nvml_unavailable: ERROR_LIBRARY_NOT_FOUND". Empty means complete.
	Quality []string `json:"quality,omitempty"`
}

// EventKey is the deterministic key of a job event: the same job end seen
// twice has the same key, so storing it twice changes nothing.
func EventKey(cluster string, jobID uint64, restart int, node string, kind Kind) string {
	return fmt.Sprintf("%s/%d/%d/%s/%s", cluster, jobID, restart, node, kind)
}
