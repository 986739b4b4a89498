package store

import (
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// KeyState is what the ledger knows of a record key.
type KeyState int

// Key states.
const (
	// KeyNew: the key's effect is not in the ledger.
	KeyNew KeyState = iota
	// KeyApplied: applied before with the same content.
	KeyApplied
	// KeyConflict: applied before with other content.
	KeyConflict
)

// AppliedKey says whether a record key was applied, and with the same
// content (sha256 hex) or not. Keys are never pruned (applied_keys), so
// this outlives the ingested file list, the samples and the archive.
func (b *Batch) AppliedKey(key, hash string) (KeyState, error) {
	row, err := b.queryRow(`SELECT sha256 FROM applied_keys WHERE key = ?`, key)
	if err != nil {
		return KeyNew, err
	}
	var h string
	switch err := row.Scan(&h); {
	case errors.Is(err, sql.ErrNoRows):
		return KeyNew, nil
	case err != nil:
		return KeyNew, fmt.Errorf("look up key %s: %w", key, err)
	}
	if h == hash {
		return KeyApplied, nil
	}
	return KeyConflict, nil
}

// MaxKeysAsked bounds the keys of one KeysKnown call.
const MaxKeysAsked = 500

// KeysKnown is AppliedKey for many keys in one query: each applied key's
// content hash; a key it does not hold was not applied.
func (b *Batch) KeysKnown(keys []string) (map[string]string, error) {
	if len(keys) > MaxKeysAsked {
		return nil, fmt.Errorf("look up %d keys: more than %d at once", len(keys), MaxKeysAsked)
	}
	known := make(map[string]string, len(keys))
	if len(keys) == 0 {
		return known, nil
	}
	var q strings.Builder
	var args []any
	q.WriteString(`SELECT key, sha256 FROM applied_keys WHERE 1 = 1`)
	inList(&q, &args, "key", keys)
	if err := b.hashesInto(known, q.String(), args...); err != nil {
		return nil, fmt.Errorf("look up %d keys: %w", len(keys), err)
	}
	return known, nil
}

// hashesInto adds to known each (name, sha256) row that q reads: the
// keys, or the files, that a batch holds already.
func (b *Batch) hashesInto(known map[string]string, q string, args ...any) error {
	rows, err := b.query(q, args...)
	return eachRow(rows, err, func(r batchRows) error {
		var name, hash string
		if err := r.Scan(&name, &hash); err != nil {
			return err
		}
		known[name] = hash
		return nil
	})
}

// KeyApplied records that key's effect is now in the ledger (same
// transaction as the effect; on PostgreSQL with the batch's other keys,
// Batch.hold). A key applied twice keeps its first content (DO NOTHING).
func (b *Batch) KeyApplied(key, hash string) error {
	return b.hold("applied_keys", `INSERT INTO applied_keys(key, sha256, at) VALUES(?, ?, ?) ON CONFLICT DO NOTHING`,
		0, []any{key, hash, b.now.Unix()})
}
