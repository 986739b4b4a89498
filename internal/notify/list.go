package notify

import (
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/store"
)

// ListTable is gpuacct notify list's table: one row per message kept,
// newest first, with its outcome (delivered when, or why not yet or not
// at all).
func ListTable(msgs []store.NotifyMessage) *table.Table {
	t := &table.Table{Columns: []table.Column{
		{Key: "id", Title: "ID", Kind: table.Int},
		{Key: "created", Title: "DECIDED", Kind: table.Time},
		{Key: "rule", Title: "RULE"},
		{Key: "cluster", Title: "CLUSTER", Drop: 3},
		{Key: "job", Title: "JOB", Kind: table.Int},
		{Key: "user", Title: "USER"},
		{Key: "channel", Title: "VIA", Drop: 2},
		{Key: "recipient", Title: "TO"},
		{Key: "language", Title: "LANG", Drop: 4},
		{Key: "state", Title: "STATE"},
		{Key: "attempts", Title: "TRIES", Kind: table.Int, Drop: 1},
		{Key: "sent_at", Title: "SENT", Kind: table.Time},
		{Key: "next_attempt", Title: "NEXT", Kind: table.Time, Drop: 1},
		{Key: "last_error", Title: "WHY NOT", Drop: 1},
		{Key: "subject", Title: "SUBJECT", Drop: 5},
	}}
	for _, m := range msgs {
		var job, sent, next any
		if m.Job != nil {
			job = *m.Job
		}
		if m.SentAt != nil {
			sent = m.SentAt.Unix()
		}
		if m.State == store.NotifyQueued {
			next = m.NextAttempt.Unix()
		}
		t.Rows = append(t.Rows, table.Row{Cells: []any{m.ID, m.Created.Unix(), m.Rule, m.Cluster, job, m.User, m.Channel, m.Recipient,
			m.Language, m.State, int64(m.Attempts), sent, next, m.LastError, m.Subject}})
	}
	return t
}
