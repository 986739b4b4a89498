package store

import "fmt"

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

// FileIngested records that node/name was ingested in this batch.
func (b *Batch) FileIngested(node, name, hash string, size, records int) error {
	_, err := b.exec(`INSERT INTO ingested_files(node, name, sha256, size, records, at) VALUES(?, ?, ?, ?, ?, ?)
 ON CONFLICT(node, name) DO UPDATE SET sha256 = excluded.sha256, size = excluded.size, records = excluded.records, at = excluded.at`,
		node, name, hash, size, records, b.now.Unix())
	return err
}
