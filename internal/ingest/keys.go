package ingest

import (
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/store"
)

// appliedKeys answers "was this record's key applied before?" for a
// pass's files from one query per chunk of them, asked by the keys their
// names say (record.FileRecordKey), in place of one query a file: on
// PostgreSQL each was a round trip. A file whose record holds another key
// than its name says is asked about alone (store.Batch.AppliedKey).
//
// What was asked stays true for the pass: ingest is the ledger's one
// writer of applied keys, the pass notes each key it applies, and a
// batch that fails ends the pass (the next pass, or the pass done again
// carefully, asks afresh).
type appliedKeys struct {
	files *seenFiles
	next  int                      // files.files[:next] were asked about
	asked map[string]bool          // keys whose state below is the ledger's
	known map[string]store.Content // applied keys: their content
}

func newAppliedKeys(files *seenFiles) *appliedKeys {
	return &appliedKeys{files: files, asked: map[string]bool{}, known: map[string]store.Content{}}
}

// state says whether f's record (p) was applied before: with the same
// content (a duplicate) or other content (a conflict, named by key).
func (k *appliedKeys) state(b *store.Batch, f file, p *Parsed) (store.KeyState, string, error) {
	key := recordKey(p)
	if key == "" {
		return store.KeyNew, "", nil
	}
	if i, listed := k.files.at[f.node+"/"+f.name]; listed && i >= k.next {
		if err := k.ask(b, i); err != nil {
			return store.KeyNew, key, err
		}
	}
	if !k.asked[key] {
		st, err := b.AppliedKey(key, p.ContentHash)
		return st, key, err
	}
	switch h, ok := k.known[key]; {
	case !ok:
		return store.KeyNew, key, nil
	case h == store.ContentOf(p.ContentHash):
		return store.KeyApplied, key, nil
	default:
		return store.KeyConflict, key, nil
	}
}

// applied records p's key in the transaction that applied it, and notes
// it for the rest of the pass.
func (k *appliedKeys) applied(b *store.Batch, p *Parsed) error {
	key := recordKey(p)
	if key == "" {
		return nil
	}
	if err := b.KeyApplied(key, p.ContentHash); err != nil {
		return err
	}
	k.asked[key] = true
	k.known[key] = store.ContentOf(p.ContentHash)
	return nil
}

// ask looks up the keys that the names of the files from index i on say,
// up to store.MaxKeysAsked of them.
func (k *appliedKeys) ask(b *store.Batch, i int) error {
	files := k.files.files
	end := min(len(files), i+store.MaxKeysAsked)
	keys := make([]string, 0, end-i)
	for _, f := range files[i:end] {
		switch kind, key, ok := record.FileRecordKey(f.node, f.name); {
		case !ok:
		case kind == record.FileEvent:
			keys = append(keys, eventKeyPrefix+key)
		case kind == record.FileSegment:
			keys = append(keys, segmentKeyPrefix+key)
		}
	}
	known, err := b.KeysKnown(keys)
	if err != nil {
		return err
	}
	for _, key := range keys {
		k.asked[key] = true
		if h, ok := known[key]; ok {
			k.known[key] = h
		}
	}
	k.next = end
	return nil
}

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
