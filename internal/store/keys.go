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
	if err := b.writeKeys(); err != nil {
		return KeyNew, err
	}
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
	if err := b.writeKeys(); err != nil {
		return nil, err
	}
	var q strings.Builder
	var args []any
	q.WriteString(`SELECT key, sha256 FROM applied_keys WHERE 1 = 1`)
	inList(&q, &args, "key", keys)
	rows, err := b.query(q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("look up %d keys: %w", len(keys), err)
	}
	defer rows.Close()
	for rows.Next() {
		var key, hash string
		if err := rows.Scan(&key, &hash); err != nil {
			return nil, fmt.Errorf("look up %d keys: %w", len(keys), err)
		}
		known[key] = hash
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("look up %d keys: %w", len(keys), err)
	}
	return known, nil
}

// KeyApplied records that key's effect is now in the ledger (same
// transaction as the effect). A PostgreSQL batch writes its keys
// together (writeKeys).
func (b *Batch) KeyApplied(key, hash string) error {
	row := []any{key, hash, b.now.Unix()}
	if b.tx.pipe != nil {
		b.keys = append(b.keys, row)
		return b.tx.pipe.err // the batch's failure, as a write sent would say
	}
	_, err := b.exec(keyAppliedSQL, row...)
	return err
}

// A key applied twice keeps its first content (DO NOTHING), in one
// statement as in two.
const keyAppliedSQL = `INSERT INTO applied_keys(key, sha256, at) VALUES(?, ?, ?) ON CONFLICT DO NOTHING`

// writeKeys writes the keys the batch recorded and has not written, by
// one statement (execMany): before a read of applied_keys, at a Flush and
// at the commit.
func (b *Batch) writeKeys() error {
	rows := b.keys
	b.keys = nil
	return b.execMany(keyAppliedSQL, rows)
}
