package web

import (
	"context"
	"net/http"
	"net/netip"
	"slices"
	"strings"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/slurm"
)

// ledgerName is how an answer names the ledger: its path or URL names
// the server's files, which no web client is told.
const ledgerName = "the ledger"

// hiddenUser stands for another user's name when web.private_data is
// on (docs/dashboard.md "Private data").
const hiddenUser = "(hidden)"

// Identity says who a request logged in as: the basic-auth user the web
// config file checked (webconfig.Users).
type Identity interface {
	Authenticated(r *http.Request) (string, bool)
	// Any reports whether the file lists users at all.
	Any() bool
}

// viewer is whose eyes an answer is rendered for. Its zero value sees
// every name: web.private_data off, or an admin.
type viewer struct {
	// private: names other than name are hidden, but for the users of
	// the accounts name coordinates in Slurm (roles, as read when the
	// request came).
	private bool
	name    string
	roles   *slurm.Coordination
}

// user is u as the viewer may see it.
func (v viewer) user(u string) string {
	if v.sees(u) || u == "" {
		return u
	}
	return hiddenUser
}

// sees reports whether the viewer may see user u's name and pages.
func (v viewer) sees(u string) bool {
	return !v.private || u == v.name || v.roles.Sees(v.name, u)
}

type viewerKey struct{}

func viewerOf(r *http.Request) viewer {
	v, _ := r.Context().Value(viewerKey{}).(viewer)
	return v
}

// as is h rendering for r's viewer: a copy that shares everything but
// the viewer.
func (h *Handler) as(r *http.Request) *Handler {
	v := viewerOf(r)
	if v == h.v {
		return h
	}
	c := *h
	c.v = v
	return &c
}

// userLink is user u's name and page as the viewer may see them: a
// hidden name links nowhere.
func (h *Handler) userLink(u string) (name, url string) {
	if n := h.v.user(u); n != u {
		return n, ""
	}
	return u, userPath(u)
}

// anonymous is h rendering with every user's name hidden.
func (h *Handler) anonymous() *Handler {
	c := *h
	c.v = viewer{private: true}
	return &c
}

// who is the user r logged in as: the basic-auth user the web config
// file checked, else web.user_header's value when the peer may set it
// (any peer when web.trusted_proxies is empty, else only those).
func (h *Handler) who(r *http.Request) (string, bool) {
	if h.o.Users != nil {
		if name, ok := h.o.Users.Authenticated(r); ok {
			return name, true
		}
	}
	if h.o.UserHeader == "" {
		return "", false
	}
	if len(h.o.TrustedProxies) > 0 && !fromProxy(r, h.o.TrustedProxies) {
		return "", false
	}
	name := strings.TrimSpace(r.Header.Get(h.o.UserHeader))
	return name, name != ""
}

// fromProxy reports whether r's peer is one of the trusted proxies, as
// clientKey judges X-Forwarded-For's.
func fromProxy(r *http.Request, proxies []netip.Prefix) bool {
	a, ok := parseForwarded(r.RemoteAddr)
	return ok && isTrusted(a, proxies)
}

// private is the gate of web.private_data: a request without an
// identity gets 401; one that names another user in a filter
// (user=, users=) gets 403 unless an admin, or a coordinator of that
// user's account, sent it; the rest go on
// with their viewer in the context.
func (h *Handler) private(next http.Handler) http.Handler {
	if !h.o.PrivateData {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name, ok := h.who(r)
		if !ok {
			h.refuse(w, r, h.needLogin(w, "web.private_data is on"))
			return
		}
		v := viewer{private: !slices.Contains(h.o.Admins, name), name: name, roles: h.o.Roles.Current()}
		q := r.URL.Query()
		for _, key := range []string{"user", "users"} {
			for _, val := range q[key] {
				for _, u := range strings.Split(val, ",") {
					if u = strings.TrimSpace(u); u != "" && !v.sees(u) {
						h.refuse(w, r, &httpError{code: http.StatusForbidden, msg: "web.private_data: only admins may ask for another user's data"})
						return
					}
				}
			}
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	})
}

// needLogin is the 401 of a request that carries no user, why it needs
// one first; with a challenge when the web config file lists users.
func (h *Handler) needLogin(w http.ResponseWriter, why string) error {
	if h.o.Users != nil && h.o.Users.Any() {
		w.Header().Set("WWW-Authenticate", `Basic realm="gpusuite", charset="UTF-8"`)
	}
	return &httpError{code: http.StatusUnauthorized, msg: "log in: " + why + " and this request carries no user (basic auth, or the reverse proxy's " + h.headerName() + ")"}
}

func (h *Handler) headerName() string {
	if h.o.UserHeader == "" {
		return "web.user_header, not set"
	}
	return h.o.UserHeader
}

// checkFilter refuses filter values the ledger never recorded, as the
// CLI does, but never names another user to a private viewer: the gate
// let through only the viewer's own name, so an unknown one is a user
// with no jobs yet, whose answer is empty, and a "did you mean" would
// list the names nearest theirs.
func (h *Handler) checkFilter(ctx context.Context, rep *report.Ledger, f report.Filter) error {
	if h.v.private {
		f.Users = nil
	}
	return rep.CheckFilter(ctx, f)
}

// publicMsg is err as a web client may read it: the query parameter
// spelled as such (cleanMsg) and the ledger named without the server's
// path or URL, whatever layer wrote it.
func (h *Handler) publicMsg(err error) string {
	msg := cleanMsg(err)
	if loc := h.o.DB; loc != "" {
		for _, s := range []string{loc, report.Redact(loc)} {
			msg = strings.ReplaceAll(msg, s, ledgerName)
		}
	}
	return msg
}

// refuse answers err as JSON under /api/ and as a page elsewhere.
func (h *Handler) refuse(w http.ResponseWriter, r *http.Request, err error) {
	if strings.HasPrefix(r.URL.Path, "/api/") {
		h.apiHandler(func(http.ResponseWriter, *http.Request) error { return err }).ServeHTTP(w, r)
		return
	}
	h.pageHandler(func(http.ResponseWriter, *http.Request) error { return err }).ServeHTTP(w, r)
}

// maskTable hides other users' names in t's user column, in place:
// every other cell, totals included, stays as it is.
func (v viewer) maskTable(t *table.Table) {
	if !v.private || t == nil {
		return
	}
	for i, c := range t.Columns {
		if c.Key != "user" {
			continue
		}
		for r := range t.Rows {
			if i < len(t.Rows[r].Cells) {
				if s, ok := t.Rows[r].Cells[i].(string); ok {
					t.Rows[r].Cells[i] = v.user(s)
				}
			}
		}
	}
}

// maskStatus hides other users' names in a status document: jobs'
// users, processes' owners, notes' authors. The processes are copied:
// they are the shared snapshot's.
func (v viewer) maskStatus(d *board.StatusDoc) {
	if !v.private {
		return
	}
	for n := range d.Nodes {
		node := &d.Nodes[n]
		v.maskNotes(node.Notes)
		for g := range node.GPUs {
			gd := &node.GPUs[g]
			v.maskJobs(gd.Jobs)
			gd.Procs = v.maskProcs(gd.Procs)
			v.maskNotes(gd.Notes)
			for s := range gd.Slices {
				v.maskJobs(gd.Slices[s].Jobs)
				gd.Slices[s].Procs = v.maskProcs(gd.Slices[s].Procs)
			}
		}
	}
}

// decision is det as v may see it: who last decided whether the run
// counts (ignore_by) hidden when v may not see them, and with it the
// "(by who, when)" the ledger's writer ends an ignore's reason with.
func (v viewer) decision(det *report.Detail) *report.Detail {
	d, ok := report.LastDecision(&det.Job)
	if !ok || v.sees(d.By) {
		return det
	}
	shown := *det
	by := v.user(d.By)
	shown.Job.IgnoreBy = &by
	if shown.Job.IgnoreReason != nil {
		shown.Job.IgnoreReason = &d.Reason
	}
	return &shown
}

func (v viewer) maskJobs(jobs []board.JobDoc) {
	for j := range jobs {
		jobs[j].User = v.user(jobs[j].User)
	}
}

// maskProcs is procs as v may see them, copied: they are the shared
// snapshot's.
func (v viewer) maskProcs(procs []record.LiveProc) []record.LiveProc {
	if procs == nil {
		return nil
	}
	out := make([]record.LiveProc, len(procs))
	for p, pr := range procs {
		if !v.sees(pr.User) {
			pr.Name = "" // the command tells what its owner runs
		}
		pr.User = v.user(pr.User)
		out[p] = pr
	}
	return out
}

func (v viewer) maskNotes(ns []board.NoteDoc) {
	if !v.private {
		return
	}
	for i := range ns {
		ns[i].Author = v.user(ns[i].Author)
		ns[i].RemovedBy = v.user(ns[i].RemovedBy)
	}
}
