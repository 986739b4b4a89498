package ingest

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// recordKey is the key whose effect a file applies to the ledger once,
// forever (store.AppliedKey): an event's, a GPU event's, a segment's key; "" for an
// aggregate, whose highest seq of a key replaces the others, so applying
// one again changes nothing.
func recordKey(p *Parsed) string {
	switch {
	case p.Event != nil:
		return eventKeyPrefix + p.Event.Key
	case p.Header != nil:
		return segmentKeyPrefix + p.Header.Key
	case p.GPUEvent != nil:
		return "gpuevent:" + p.GPUEvent.Key
	}
	return ""
}

// The prefixes of recordKey that appliedKeys also asks by.
const (
	eventKeyPrefix   = "event:"
	segmentKeyPrefix = "segment:"
)

// rejected handles a file the store refused as not its node's to say. A
// file that names a job with no event from its node yet waits in incoming
// (events come first in a pass, but may be shipped a pass later) for up
// to ingest.grace after it was shipped or its newest record, whichever is
// later; then, and for every other reason, it is quarantined.
func (in *Ingester) rejected(f file, p *Parsed, rj *store.Rejected, now time.Time, res *Result) {
	if rj.Wait {
		newest := newestRecord(p)
		if st, err := os.Lstat(f.path); err == nil && st.ModTime().After(newest) {
			newest = st.ModTime()
		}
		wait := in.d.Config.Ingest.Grace.Duration
		if now.Sub(newest) < wait {
			res.Deferred++
			if in.deferred != nil {
				in.deferred[f.path] = true
			}
			in.d.Log.Info("file waits for its job's event", "node", f.node, "file", f.path, "reason", rj.Reason)
			return
		}
		in.bad(f, fmt.Sprintf("%s after waiting %s (ingest.grace)", rj.Reason, wait), res)
		return
	}
	in.bad(f, rj.Reason, res)
}

func newestRecord(p *Parsed) time.Time {
	var t time.Time
	if p.Event != nil {
		t = p.Event.Time
	}
	if p.GPUEvent != nil {
		t = p.GPUEvent.Time
	}
	for i := range p.Samples {
		if p.Samples[i].Time.After(t) {
			t = p.Samples[i].Time
		}
	}
	for i := range p.JobGPUs {
		if p.JobGPUs[i].Last.After(t) {
			t = p.JobGPUs[i].Last
		}
	}
	return t
}

// asRejected is err as a *store.Rejected, or nil.
func asRejected(err error) *store.Rejected {
	var rj *store.Rejected
	if errors.As(err, &rj) {
		return rj
	}
	return nil
}
