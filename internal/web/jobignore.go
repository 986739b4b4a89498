package web

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/requests"
)

// ignoreSuffix ends a job page's ignore action:
// POST /job/{cluster}/{id}/ignore.
const ignoreSuffix = "/ignore"

// ignoreForm is the job page's "Ignore this job" (or "Undo") form, for
// the coordinators of the job's account and web.admins alone.
type ignoreForm struct {
	Action, Token string
	Ignored       bool
	// Status is what became of the request the user just sent (Failed:
	// refused).
	Status string
	Failed bool
}

// mayIgnore reports whether user may ignore the jobs of account from
// the web: an admin, or a coordinator of the account in Slurm (roles,
// read on their timer).
func (h *Handler) mayIgnore(user, account string) bool {
	return h.isAdmin(user) || slices.Contains(h.o.Roles.Current().Accounts(user), account)
}

// jobIgnoreForm is the form r's user sees on the page of det's run; nil
// (no form, the page as before) when the forms are off, nobody is
// logged in, or the user may not ignore the run.
func (h *Handler) jobIgnoreForm(r *http.Request, det *report.Detail) *ignoreForm {
	if h.forms == nil {
		return nil
	}
	user, ok := h.who(r)
	if !ok || !h.mayIgnore(user, det.Job.Account) {
		return nil
	}
	f := &ignoreForm{Action: jobPath("/job", det.Job.Cluster, det.Job.ID()) + ignoreSuffix, Token: h.forms.token(user), Ignored: det.Job.Ignored}
	if id := r.URL.Query().Get("filed"); id != "" {
		f.Status, f.Failed = h.ignoreStatus(id, user)
	}
	return f
}

// ignoreStatus is what became of ignore request id, filed by user.
func (h *Handler) ignoreStatus(id, user string) (string, bool) {
	read := func(id string) (requests.Request, error) { return requests.IgnoreOutcome(h.forms.dir, id) }
	return outcome(id, user, read, h.tr.T("Sent: the ledger's writer applies it within a pass (reload to see)."),
		func(out requests.Request) (string, bool) {
			if len(out.NotFound) > 0 {
				return h.tr.T("Not found in the ledger: %s", strings.Join(out.NotFound, ", ")), true
			}
			return h.tr.T("Done."), false
		})
}

// runSpec names exactly det's run, as gpuacct ignore reads it: an array
// task by its array, and the run after requeues by its number.
func runSpec(j *report.JobRow) string {
	s := strconv.FormatInt(j.JobID, 10)
	if j.ArrayJobID != nil && j.ArrayTaskID != nil {
		s = fmt.Sprintf("%d_%d", *j.ArrayJobID, *j.ArrayTaskID)
	}
	return s + "+" + strconv.Itoa(j.Restart)
}

// POST /job/{cluster}/{id}/ignore: ignore the run (action=ignore, a
// reason required) or count it again (action=unignore), through the
// same request as gpuacct ignore and unignore, in the user's name.
func (h *Handler) jobIgnore(w http.ResponseWriter, r *http.Request, p poster) error {
	action := p.form.Get("action")
	if action != requests.Ignore && action != requests.Unignore {
		return badRequest("action %q is neither %s nor %s", action, requests.Ignore, requests.Unignore)
	}
	reason := strings.TrimSpace(p.form.Get("reason"))
	if action == requests.Ignore && reason == "" {
		return badRequest("%s", h.tr.T("a reason is required: say why the job should not count, e.g. \"benchmark of the new nodes\""))
	}
	if strings.ContainsFunc(reason, func(c rune) bool { return c < ' ' || c == 0x7f }) {
		return badRequest("%s", h.tr.T("the reason holds a control character: write it on one line"))
	}
	if err := requests.CheckIgnoreBounds(reason, 1); err != nil {
		return badRequest("%v", err)
	}
	var job report.JobRow
	if err := h.withConn(r, func(c *conn) error {
		det, err := h.loadJob(r, c)
		if err == nil {
			job = det.Job
		}
		return err
	}); err != nil {
		return err
	}
	if !h.mayIgnore(p.user, job.Account) {
		return &httpError{code: http.StatusForbidden, msg: h.tr.T("%s may not ignore job %s: only web.admins and the coordinators of account %s in Slurm may", p.user, job.ID(), job.Account)}
	}
	req := &requests.Request{Action: action, Jobs: []string{runSpec(&job)}, Cluster: job.Cluster, Reason: reason}
	if err := h.file(req, p); err != nil {
		return err
	}
	http.Redirect(w, r, jobPath("/job", job.Cluster, job.ID())+"?"+url.Values{"filed": {req.ID}}.Encode(), http.StatusSeeOther)
	return nil
}
