package store

import (
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// Notify message states (notify_messages.state).
const (
	NotifyQueued = "queued"
	NotifySent   = "sent"
	NotifyFailed = "failed"
)

// NotifyMessage is one row of notify_messages: a message the notifier
// decided to send, kept before it is attempted (invariant 11).
type NotifyMessage struct {
	ID int64
	// Key is the fire-once key: rule, condition and recipient.
	Key       string
	Rule      string
	Recipient string // a mail address or a webhook's name
	Channel   string // mail, webhook
	Language  string
	Cluster   string
	Job       *int64 // Slurm job id; nil when about no job
	Restart   int
	User      string // whom it is about
	Subject   string
	Body      string
	Created   time.Time
	State     string
	Attempts  int
	// NextAttempt is when a queued message is due.
	NextAttempt time.Time
	LastError   string
	SentAt      *time.Time
}

const notifyColumns = `id, key, rule, recipient, channel, language, cluster, job, restart, user, subject, body, created, state, attempts, next_attempt, last_error, sent_at`

func scanNotify(r scanner) (NotifyMessage, error) {
	var m NotifyMessage
	var job, sent sql.NullInt64
	var created, next int64
	if err := r.Scan(&m.ID, &m.Key, &m.Rule, &m.Recipient, &m.Channel, &m.Language, &m.Cluster, &job, &m.Restart, &m.User,
		&m.Subject, &m.Body, &created, &m.State, &m.Attempts, &next, &m.LastError, &sent); err != nil {
		return NotifyMessage{}, err
	}
	m.Job = ptrInt(job)
	m.Created = time.Unix(created, 0).UTC()
	m.NextAttempt = time.Unix(next, 0).UTC()
	m.SentAt = ptrTime(sent)
	return m, nil
}

// EnqueueNotify keeps m as queued, due at once, unless a message with its
// key is kept already: then nothing changes and added is false. That is
// what makes a rule fire once per condition and recipient, whatever
// restarts, second heads or re-ingests evaluate it again.
func (b *Batch) EnqueueNotify(m NotifyMessage) (id int64, added bool, err error) {
	var job any
	if m.Job != nil {
		job = *m.Job
	}
	lang := m.Language
	if lang == "" {
		lang = "en"
	}
	row, err := b.queryRow(`INSERT INTO notify_messages (key, rule, recipient, channel, language, cluster, job, restart, user, subject, body, created, state, next_attempt)
 VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?) ON CONFLICT(key) DO NOTHING RETURNING id`,
		m.Key, m.Rule, m.Recipient, m.Channel, lang, m.Cluster, job, m.Restart, m.User, m.Subject, m.Body, m.Created.Unix(), m.Created.Unix())
	if err != nil {
		return 0, false, fmt.Errorf("enqueue message %s: %w", m.Key, err)
	}
	switch err := row.Scan(&id); {
	case err == nil:
		return id, true, nil
	case !errors.Is(err, sql.ErrNoRows):
		return 0, false, fmt.Errorf("enqueue message %s: %w", m.Key, err)
	}
	row, err = b.queryRow(`SELECT id FROM notify_messages WHERE key = ?`, m.Key)
	if err != nil {
		return 0, false, fmt.Errorf("enqueue message %s: %w", m.Key, err)
	}
	if err := row.Scan(&id); err != nil {
		return 0, false, fmt.Errorf("enqueue message %s: %w", m.Key, err)
	}
	return id, false, nil
}

// ClaimNotify returns at most limit queued messages due at now, oldest
// due first, and counts an attempt for each, due again at now + lease: a
// writer killed while delivering them tries again after lease, never
// before (a message may then go twice; it is never lost).
func (b *Batch) ClaimNotify(now time.Time, lease time.Duration, limit int) ([]NotifyMessage, error) {
	rs, err := b.query(`SELECT `+notifyColumns+` FROM notify_messages WHERE state = 'queued' AND next_attempt <= ? ORDER BY next_attempt, id LIMIT ?`,
		now.Unix(), limit)
	if err != nil {
		return nil, fmt.Errorf("claim due messages: %w", err)
	}
	var out []NotifyMessage
	for rs.Next() {
		m, err := scanNotify(rs)
		if err != nil {
			rs.Close()
			return nil, fmt.Errorf("claim due messages: %w", err)
		}
		out = append(out, m)
	}
	if err := rs.Err(); err != nil {
		rs.Close()
		return nil, fmt.Errorf("claim due messages: %w", err)
	}
	rs.Close()
	next := now.Add(lease)
	for i := range out {
		out[i].Attempts++
		out[i].NextAttempt = time.Unix(next.Unix(), 0).UTC()
		if _, err := b.exec(`UPDATE notify_messages SET attempts = ?, next_attempt = ? WHERE id = ?`, out[i].Attempts, next.Unix(), out[i].ID); err != nil {
			return nil, fmt.Errorf("claim message %d: %w", out[i].ID, err)
		}
	}
	return out, nil
}

// MarkNotifySent records message id delivered at at.
func (b *Batch) MarkNotifySent(id int64, at time.Time) error {
	if _, err := b.exec(`UPDATE notify_messages SET state = 'sent', sent_at = ?, last_error = '' WHERE id = ?`, at.Unix(), id); err != nil {
		return fmt.Errorf("mark message %d sent: %w", id, err)
	}
	return nil
}

// MarkNotifyFailed records why a delivery of message id failed. With
// final the message is given up (state failed); otherwise it stays
// queued, due again at next.
func (b *Batch) MarkNotifyFailed(id int64, reason string, next time.Time, final bool) error {
	state := NotifyQueued
	if final {
		state = NotifyFailed
	}
	if _, err := b.exec(`UPDATE notify_messages SET state = ?, last_error = ?, next_attempt = ? WHERE id = ?`, state, reason, next.Unix(), id); err != nil {
		return fmt.Errorf("mark message %d failed: %w", id, err)
	}
	return nil
}

// SetNotifyOptOut opts user out of rule ("all": every rule) at now, or
// back in when off is false.
func (b *Batch) SetNotifyOptOut(user, rule string, off bool, now time.Time) error {
	q, args := `DELETE FROM notify_optout WHERE user = ? AND rule = ?`, []any{user, rule}
	if off {
		q, args = `INSERT INTO notify_optout (user, rule, created) VALUES (?, ?, ?) ON CONFLICT(user, rule) DO NOTHING`, []any{user, rule, now.Unix()}
	}
	if _, err := b.exec(q, args...); err != nil {
		return fmt.Errorf("set opt-out of %s from %s: %w", user, rule, err)
	}
	return nil
}

// DeferNotify puts a claimed message back, due at next, without counting
// the claim as an attempt: it was not tried (the recipient's rate limit,
// a pass out of time); why says so.
func (b *Batch) DeferNotify(id int64, why string, next time.Time) error {
	if _, err := b.exec(`UPDATE notify_messages SET attempts = attempts - 1, next_attempt = ?, last_error = ? WHERE id = ? AND state = 'queued' AND attempts > 0`,
		next.Unix(), why, id); err != nil {
		return fmt.Errorf("defer message %d: %w", id, err)
	}
	return nil
}
