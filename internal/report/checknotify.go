package report

import (
	"context"
	"fmt"
	"time"
)

// NotifyStuckAfter is how long past its time a queued message may wait
// before check calls the queue stuck: the Prometheus alert
// GPUSuiteNotifyQueueStuck's threshold.
const NotifyStuckAfter = time.Hour

// CheckNotify is check's view of the notifier's queue: a problem when a
// queued message has waited past its time longer than stuck, and a
// summary of the messages due ("" for both while nothing is queued, so
// that a site without the notifier reads as before).
func (d *Ledger) CheckNotify(ctx context.Context, now time.Time, stuck time.Duration) (problem, summary string, err error) {
	v, err := d.st.Version(ctx)
	if err != nil {
		return "", "", d.wrap(err)
	}
	if v < notifySchema {
		return "", "", nil
	}
	q, err := d.st.NotifyQueueState(ctx)
	if err != nil {
		return "", "", d.wrap(err)
	}
	if q.Queued == 0 || q.OldestDue == nil {
		return "", "", nil
	}
	late := now.Sub(*q.OldestDue)
	if late <= 0 {
		// Waiting for its backoff, not stuck.
		return "", fmt.Sprintf("notify queue: %d queued, next due in %s", q.Queued, roundAge(-late)), nil
	}
	summary = fmt.Sprintf("notify queue: %d queued, oldest due %s ago", q.Queued, roundAge(late))
	if late > stuck {
		problem = fmt.Sprintf("notify: a queued message has waited %s past its time (limit %s): the mail server or a webhook refuses or does not answer; 'gpuacct notify list' shows the last error",
			roundAge(late), stuck)
	}
	return problem, summary, nil
}
