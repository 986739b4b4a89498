package store

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
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

// applied_keys holds a key as the 16 first bytes of its sha256, in two
// integers (key_hi, key_lo), and the record's content hash as the 16
// first bytes of its sha256 (content), since migration 0023: a fixed 40
// bytes a row where the text key and hex hash took about 100, so that a
// 10,000-GPU year of keys (about 500 M) fits the ledger. 128 bits keep
// the answers: two keys, or two contents, read alike by chance once in
// 2^64 among 2^32 of them. The key is integers, not bytes, because it is
// gpuacct migrate's resume point, kept as JSON (copy.go), where integers
// come back as they went.

// digestKey is key's two integers in applied_keys.
func digestKey(key string) (hi, lo int64) {
	sum := sha256.Sum256([]byte(key))
	return int64(binary.BigEndian.Uint64(sum[:8])), int64(binary.BigEndian.Uint64(sum[8:16]))
}

// Content is what the ledger keeps of a record's content hash.
type Content [16]byte

// ContentOf is the Content the ledger keeps for content hash h (any
// text: a sha256 in hex from ingest, a request's own hash).
func ContentOf(h string) Content {
	sum := sha256.Sum256([]byte(h))
	return Content(sum[:16])
}

// AppliedKey says whether a record key was applied, and with the same
// content (its hash) or not. Keys are never pruned (applied_keys), so
// this outlives the ingested file list, the samples and the archive.
func (b *Batch) AppliedKey(key, hash string) (KeyState, error) {
	hi, lo := digestKey(key)
	row, err := b.queryRow(`SELECT content FROM applied_keys WHERE key_hi = ? AND key_lo = ?`, hi, lo)
	if err != nil {
		return KeyNew, err
	}
	var c []byte
	switch err := row.Scan(&c); {
	case errors.Is(err, sql.ErrNoRows):
		return KeyNew, nil
	case err != nil:
		return KeyNew, fmt.Errorf("look up key %s: %w", key, err)
	}
	if want := ContentOf(hash); string(c) == string(want[:]) {
		return KeyApplied, nil
	}
	return KeyConflict, nil
}

// MaxKeysAsked bounds the keys of one KeysKnown call.
const MaxKeysAsked = 500

// KeysKnown is AppliedKey for many keys in one query: each applied key's
// Content; a key it does not hold was not applied.
func (b *Batch) KeysKnown(keys []string) (map[string]Content, error) {
	if len(keys) > MaxKeysAsked {
		return nil, fmt.Errorf("look up %d keys: more than %d at once", len(keys), MaxKeysAsked)
	}
	known := make(map[string]Content, len(keys))
	if len(keys) == 0 {
		return known, nil
	}
	type digest struct{ hi, lo int64 }
	byDigest := make(map[digest]string, len(keys))
	his := make([]int64, 0, len(keys))
	for _, k := range keys {
		hi, lo := digestKey(k)
		byDigest[digest{hi, lo}] = k
		his = append(his, hi)
	}
	var q strings.Builder
	var args []any
	// By key_hi alone, the primary key's first column: key_lo picks the
	// row among the (almost never more than one) that share it.
	q.WriteString(`SELECT key_hi, key_lo, content FROM applied_keys WHERE 1 = 1`)
	inList(&q, &args, "key_hi", his)
	rows, err := b.query(q.String(), args...)
	err = eachRow(rows, err, func(r batchRows) error {
		var d digest
		var c []byte
		if err := r.Scan(&d.hi, &d.lo, &c); err != nil {
			return err
		}
		if len(c) != len(Content{}) {
			return fmt.Errorf("key content of %d bytes, want %d", len(c), len(Content{}))
		}
		if k, ok := byDigest[d]; ok {
			known[k] = Content(c)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("look up %d keys: %w", len(keys), err)
	}
	return known, nil
}

// hashesInto adds to known each (name, sha256) row that q reads: the
// files that a batch holds already.
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
	hi, lo := digestKey(key)
	c := ContentOf(hash)
	return b.hold("applied_keys", `INSERT INTO applied_keys(key_hi, key_lo, content, at) VALUES(?, ?, ?, ?) ON CONFLICT DO NOTHING`,
		0, []any{hi, lo, c[:], b.now.Unix()})
}

// keysStepBatch is how many old keys migrateKeysStep reads at a time (a
// variable for its test), and keysStepRows how many rows one of its
// INSERTs writes.
var (
	keysStepBatch = 20000
	keysStepRows  = 500
)

// migrateKeysStep is migration 0023's Go step: it moves the text keys of
// applied_keys_text (the table before 0023, renamed by its SQL) into
// applied_keys as digests, in key order and bounded batches (memory: one
// batch), and drops the old table. A key whose digest another key took
// already fails the migration rather than lose either (never met at
// 128 bits).
func migrateKeysStep(ctx context.Context, tx *ledgerTx) error {
	var last string
	first := true
	for {
		q := `SELECT key, sha256, at FROM applied_keys_text`
		args := []any{}
		if !first {
			q += ` WHERE key > ?`
			args = append(args, last)
		}
		q += ` ORDER BY key LIMIT ` + fmt.Sprint(keysStepBatch)
		rows, err := tx.QueryContext(ctx, q, args...)
		if err != nil {
			return fmt.Errorf("read applied keys: %w", translate(err))
		}
		var got [][]any
		for rows.Next() {
			var key, hash string
			var at int64
			if err := rows.Scan(&key, &hash, &at); err != nil {
				rows.Close()
				return fmt.Errorf("read applied keys: %w", translate(err))
			}
			hi, lo := digestKey(key)
			c := ContentOf(hash)
			got = append(got, []any{hi, lo, c[:], at})
			last = key
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return fmt.Errorf("read applied keys: %w", translate(err))
		}
		rows.Close()
		first = false
		for from := 0; from < len(got); from += keysStepRows {
			chunk := got[from:min(from+keysStepRows, len(got))]
			args := make([]any, 0, 4*len(chunk))
			for _, r := range chunk {
				args = append(args, r...)
			}
			q := `INSERT INTO applied_keys(key_hi, key_lo, content, at) VALUES ` +
				strings.TrimSuffix(strings.Repeat("(?, ?, ?, ?), ", len(chunk)), ", ")
			if _, err := tx.ExecContext(ctx, q, args...); err != nil {
				return fmt.Errorf("write applied keys: %w", translate(err))
			}
		}
		if len(got) < keysStepBatch {
			break
		}
	}
	if _, err := tx.ExecContext(ctx, `DROP TABLE applied_keys_text`); err != nil {
		return fmt.Errorf("drop applied_keys_text: %w", translate(err))
	}
	return nil
}
