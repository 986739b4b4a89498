package store

import (
	"fmt"
	"strings"
)

// FileSeen reports whether the file node/name was ingested with this
// content (sha256 hex) already.
func (b *Batch) FileSeen(node, name, hash string) (bool, error) {
	row, err := b.queryRow(`SELECT count(*) FROM ingested_files WHERE node = ? AND name = ? AND sha256 = ?`, node, name, hash)
	if err != nil {
		return false, err
	}
	var n int
	if err := row.Scan(&n); err != nil {
		return false, fmt.Errorf("look up %s/%s: %w", node, name, err)
	}
	return n > 0, nil
}

// FileIngested records that node/name was ingested in this batch (on
// PostgreSQL with the batch's other files, Batch.hold).
func (b *Batch) FileIngested(node, name, hash string, size, records int) error {
	return b.hold("ingested_files", `INSERT INTO ingested_files(node, name, sha256, size, records, at) VALUES(?, ?, ?, ?, ?, ?)
 ON CONFLICT(node, name) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size, records = excluded.records, at = excluded.at`,
		2, []any{node, name, hash, size, records, b.now.Unix()})
}

// MaxFilesAsked bounds the names of one FilesKnown call.
const MaxFilesAsked = 500

// FilesKnown is FileSeen for many files of one node in one query: of
// names, those ingested before, each with the content (sha256 hex) it was
// ingested with.
func (b *Batch) FilesKnown(node string, names []string) (map[string]string, error) {
	if len(names) > MaxFilesAsked {
		return nil, fmt.Errorf("look up %d files of %s: more than %d at once", len(names), node, MaxFilesAsked)
	}
	known := map[string]string{}
	if len(names) == 0 {
		return known, nil
	}
	var q strings.Builder
	args := []any{node}
	q.WriteString(`SELECT name, sha256 FROM ingested_files WHERE node = ?`)
	inList(&q, &args, "name", names)
	if err := b.hashesInto(known, q.String(), args...); err != nil {
		return nil, fmt.Errorf("look up %d files of %s: %w", len(names), node, err)
	}
	return known, nil
}

// Pipelined says whether the batch's writes go out without waiting for
// their results until the next read, Flush or Commit (PostgreSQL): a
// failed write is then known only at one of those, not at the statement.
func (b *Batch) Pipelined() bool { return b.tx.pipe != nil }
