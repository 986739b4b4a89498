package report

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/store"
)

// notifySchema is the first schema with notify_messages: an older ledger
// (the ingest not yet restarted on this gpuacct) has sent nothing.
const notifySchema = 15

// maxJobMessages bounds the messages one job shows (invariant 9): a
// rule fires once per condition and recipient, so a run has a few.
const maxJobMessages = 100

// JobMessage is one message the notifier kept about a job run, as
// gpuacct job and the job page show it (invariant 11).
type JobMessage struct {
	Rule      string `json:"rule"`
	Recipient string `json:"recipient"`
	Channel   string `json:"channel"`
	// Queued is when the message was decided and kept; Sent when it was
	// delivered; NextTry when a queued one is due again.
	Queued   time.Time  `json:"queued"`
	State    string     `json:"state"`
	Attempts int        `json:"attempts"`
	Sent     *time.Time `json:"sent,omitempty"`
	NextTry  *time.Time `json:"next_try,omitempty"`
	// Error is why the last attempt failed ("" when none did).
	Error string `json:"error,omitempty"`
}

// JobMessages are the messages kept about j's run, oldest first; none on
// a ledger older than the notifier.
func (d *Ledger) JobMessages(ctx context.Context, j *JobRow) ([]JobMessage, error) {
	v, err := d.st.Version(ctx)
	if err != nil {
		return nil, d.wrap(err)
	}
	if v < notifySchema {
		return nil, nil
	}
	id := j.JobID
	ms, err := d.st.NotifyMessages(ctx, store.NotifyQuery{Cluster: j.Cluster, Job: &id, Limit: maxJobMessages})
	if err != nil {
		return nil, d.wrap(err)
	}
	var out []JobMessage
	// The store answers newest first; a job's story reads oldest first.
	for i := len(ms) - 1; i >= 0; i-- {
		m := ms[i]
		if m.Restart != j.Restart {
			continue
		}
		x := JobMessage{Rule: m.Rule, Recipient: m.Recipient, Channel: m.Channel, Queued: m.Created.UTC(), State: m.State, Attempts: m.Attempts,
			Error: m.LastError}
		if m.SentAt != nil {
			t := m.SentAt.UTC()
			x.Sent = &t
		}
		if m.State == store.NotifyQueued {
			t := m.NextAttempt.UTC()
			x.NextTry = &t
		}
		out = append(out, x)
	}
	return out, nil
}

// Outcome is the message's state in words: sent when, queued with its
// next try, or failed and why.
func (m JobMessage) Outcome(loc *time.Location) string {
	tf := func(t time.Time) string { return t.In(loc).Format("2006-01-02 15:04:05") }
	why := ""
	if m.Error != "" {
		why = ": " + firstLine(m.Error)
	}
	switch {
	case m.State == store.NotifySent && m.Sent != nil:
		return "sent " + tf(*m.Sent)
	case m.State == store.NotifyQueued && m.NextTry != nil && m.Attempts == 0:
		return "queued, due " + tf(*m.NextTry)
	case m.State == store.NotifyQueued && m.NextTry != nil:
		return fmt.Sprintf("queued, next try %s after %s%s", tf(*m.NextTry), plural(m.Attempts, "attempt", "attempts"), why)
	case m.State == store.NotifyFailed:
		return fmt.Sprintf("failed after %s%s", plural(m.Attempts, "attempt", "attempts"), why)
	}
	return m.State + why
}

// WriteJobMessagesText writes the Messages section gpuacct job ends with,
// nothing when the run has none.
func WriteJobMessagesText(w io.Writer, ms []JobMessage, loc *time.Location) error {
	if len(ms) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("\nMessages:\n")
	for _, m := range ms {
		fmt.Fprintf(&b, "  - %s %s by %s to %s: %s\n", m.Queued.In(loc).Format("2006-01-02 15:04:05"), m.Rule, m.Channel, m.Recipient, m.Outcome(loc))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteJobJSONMessages is WriteJobJSON with the run's messages as the
// object's last key, "messages"; without messages it writes exactly what
// WriteJobJSON does, so a job the notifier never spoke of reads as
// before.
func WriteJobJSONMessages(w io.Writer, det *Detail, m *teams.Mapping, shown string, ms []JobMessage) error {
	if len(ms) == 0 {
		return WriteJobJSON(w, det, m, shown)
	}
	var b bytes.Buffer
	if err := WriteJobJSON(&b, det, m, shown); err != nil {
		return err
	}
	if err := appendJSONKey(&b, "messages", ms); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}
