package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// ActiveNotes counts the notes of uid active at now (the per-user cap on
// notes is checked against it in the batch that adds one).
func (b *Batch) ActiveNotes(uid int, now time.Time) (int, error) {
	row, err := b.queryRow(`SELECT count(*) FROM notes WHERE uid = ?1 AND removed_at IS NULL AND created <= ?2 AND until > ?2`, uid, now.Unix())
	if err != nil {
		return 0, fmt.Errorf("count notes of uid %d: %w", uid, err)
	}
	var n int
	if err := row.Scan(&n); err != nil {
		return 0, fmt.Errorf("count notes of uid %d: %w", uid, err)
	}
	return n, nil
}

// AddNote keeps n (its ID and removal are ignored) and returns its id.
// request names the queued request that carries it: the same request
// applied again returns the note it added the first time.
func (b *Batch) AddNote(n Note, request string) (int64, error) {
	var gpu any
	if n.GPU != nil {
		gpu = *n.GPU
	}
	var req any
	if request != "" {
		req = request
		row, err := b.queryRow(`SELECT id FROM notes WHERE request = ?`, request)
		if err != nil {
			return 0, err
		}
		var id int64
		switch err := row.Scan(&id); {
		case err == nil:
			return id, nil
		case !errors.Is(err, sql.ErrNoRows):
			return 0, fmt.Errorf("add note: %w", err)
		}
	}
	row, err := b.queryRow(`INSERT INTO notes (cluster, node, gpu, until, text, author, uid, created, request) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`,
		n.Cluster, n.Node, gpu, n.Until.Unix(), n.Text, n.Author, n.UID, n.Created.Unix(), req)
	if err != nil {
		return 0, fmt.Errorf("add note: %w", err)
	}
	var id int64
	if err := row.Scan(&id); err != nil {
		return 0, fmt.Errorf("add note: %w", err)
	}
	return id, nil
}

// RemoveNote marks note id removed at now by by, when allowed (nil:
// always) accepts the note as it is; allowed's error is returned as is.
// It returns the note as it was: ErrNoNote when there is none,
// ErrNoteRemoved when it was removed already.
func (b *Batch) RemoveNote(id int64, by string, now time.Time, allowed func(Note) error) (Note, error) {
	row, err := b.queryRow(`SELECT `+noteColumns+` FROM notes WHERE id = ?`, id)
	if err != nil {
		return Note{}, err
	}
	n, err := scanNote(row)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return Note{}, fmt.Errorf("note %d: %w", id, ErrNoNote)
	case err != nil:
		return Note{}, fmt.Errorf("remove note %d: %w", id, err)
	case n.RemovedAt != nil:
		return n, fmt.Errorf("note %d: %w", id, ErrNoteRemoved)
	}
	if allowed != nil {
		if err := allowed(n); err != nil {
			return n, err
		}
	}
	if _, err := b.exec(`UPDATE notes SET removed_at = ?, removed_by = ? WHERE id = ? AND removed_at IS NULL`, now.Unix(), by, id); err != nil {
		return n, fmt.Errorf("remove note %d: %w", id, err)
	}
	return n, nil
}
