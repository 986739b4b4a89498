package web

import (
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/notes"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/requests"
)

// The booking page and its two actions: /book?node=NODE[&gpu=INDEX]
// lists the bookings in force on a GPU or a node, and lets a logged-in
// user book it, edit or free their own; the actions file note requests
// for the writer, as gpuacct note add and rm do, in the user's name.
const (
	bookPath       = "/book"
	bookAddPath    = "/book/add"
	bookRemovePath = "/book/rm"
	// maxRequestID bounds the request id a page is asked to show:
	// requests.Submit's ids are some 60 bytes.
	maxRequestID = 128
)

// bookingView is one booking in force on the page's target.
type bookingView struct {
	ID                int64
	Target, Author    string
	Until, UntilInput string
	Text              string
	Mine              bool
	Node              string
	GPU               string
}

type bookView struct {
	base
	Node, GPU, Target string
	Bookings          []bookingView
	// Forms: the forms are on and a user is logged in (User), whose
	// Token the forms carry; else the page says how to book (CLI).
	Forms  bool
	User   string
	Token  string
	Filed  string
	Status string
	Failed bool
	Cmd    string
}

// target reads node and gpu from v as the page and its actions take
// them.
func bookTarget(v url.Values) (node string, gpu *int, err error) {
	node = strings.TrimSpace(v.Get("node"))
	if err := requests.CheckNode(node); err != nil {
		return "", nil, badRequest("node: %v", err)
	}
	g := strings.TrimSpace(v.Get("gpu"))
	if g == "" {
		return node, nil, nil
	}
	i, err := strconv.Atoi(g)
	if err != nil || i < 0 || i > requests.MaxGPU {
		return "", nil, badRequest("gpu %q is not an index 0..%d", g, requests.MaxGPU)
	}
	return node, &i, nil
}

func targetName(tr *i18n.Printer, node string, gpu *int) string {
	if gpu == nil {
		return tr.T("node %s", node)
	}
	return tr.T("%s GPU %s", node, strconv.Itoa(*gpu))
}

// GET /book?node=NODE[&gpu=INDEX][&filed=ID]: the bookings in force on
// the target and the forms; filed is a request the user just sent,
// whose outcome the page says once the writer applied it.
func (h *Handler) bookPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	node, gpu, err := bookTarget(q)
	if err != nil {
		return err
	}
	now := h.o.Now()
	v := bookView{Node: node, Target: targetName(h.tr, node, gpu)}
	if gpu != nil {
		v.GPU = strconv.Itoa(*gpu)
	}
	user, logged := h.who(r)
	v.Forms = h.forms != nil && logged
	if v.Forms {
		v.User, v.Token = user, h.forms.token(user)
	}
	v.Cmd = "gpuacct note add " + node
	if gpu != nil {
		v.Cmd += ":" + v.GPU
	}
	v.Cmd += ` --until 4h --text "..."`
	var ns []report.Note
	if err := h.withConn(r, func(c *conn) error {
		var err error
		ns, err = c.rep.Notes(r.Context(), now, false)
		return err
	}); err != nil {
		return err
	}
	admin := logged && h.isAdmin(user)
	for _, n := range ns {
		if !h.onTarget(n, node, gpu) {
			continue
		}
		b := bookingView{ID: n.ID, Target: targetName(h.tr, n.Node, n.GPU), Author: h.v.user(n.Author), Text: n.Text, Node: n.Node,
			Until: h.tr.Time(n.Until.In(h.o.Location), "2006-01-02 15:04 MST"), UntilInput: n.Until.In(h.o.Location).Format("2006-01-02 15:04"),
			Mine: v.Forms && (n.Author == user || admin)}
		if n.GPU != nil {
			b.GPU = strconv.Itoa(*n.GPU)
		}
		v.Bookings = append(v.Bookings, b)
	}
	if id := q.Get("filed"); id != "" && v.Forms {
		v.Filed = id
		v.Status, v.Failed = h.filedStatus(id, user)
	}
	v.base = h.base(r, nil, h.tr.T("Book %s", v.Target))
	v.Crumbs = []link{{Name: "Board", URL: "/"}}
	v.CLI = v.Cmd
	w.Header().Set("Cache-Control", "no-store")
	h.render(w, http.StatusOK, "book", &v)
	return nil
}

// onTarget reports whether note n books the page's target: the GPU, or
// the node (a whole-node note books each of its GPUs), on this cluster.
func (h *Handler) onTarget(n report.Note, node string, gpu *int) bool {
	if n.Node != node || (h.o.Cluster != "" && n.Cluster != "" && n.Cluster != h.o.Cluster) {
		return false
	}
	return gpu == nil || n.GPU == nil || *n.GPU == *gpu
}

func (h *Handler) isAdmin(user string) bool { return slices.Contains(h.o.Admins, user) }

// filedStatus is what became of request id, filed by user: applied,
// refused (failed) or waiting for the writer's pass. Another user's
// request, or an id that is no request's, says nothing of it.
func (h *Handler) filedStatus(id, user string) (string, bool) {
	read := func(id string) (requests.Request, error) { return requests.NoteOutcome(h.forms.dir, id, h.forms.uid) }
	return outcome(id, user, read, h.tr.T("Sent: the board shows it once the ledger's writer applies it, within a pass (reload to see)."),
		func(out requests.Request) (string, bool) {
			if out.Action == requests.NoteRemove {
				return h.tr.T("Done: booking %s is removed.", strconv.FormatInt(out.Note.ID, 10)), false
			}
			return h.tr.T("Done: booking %s is kept; every board shows it.", strconv.FormatInt(out.Note.ID, 10)), false
		})
}

// POST /book/add: book the target (node, gpu) until a time, with a
// text; replaces, an edit of one's own booking.
func (h *Handler) bookAdd(w http.ResponseWriter, r *http.Request, p poster) error {
	node, gpu, err := bookTarget(p.form)
	if err != nil {
		return err
	}
	now := h.o.Now()
	until, err := notes.ParseUntil(p.form.Get("until"), now, h.o.Location)
	if err != nil {
		return badRequest("%v", err)
	}
	text, err := requests.CheckText(p.form.Get("text"))
	if err != nil {
		return badRequest("%v", err)
	}
	var replaces int64
	if s := p.form.Get("replaces"); s != "" {
		if replaces, err = h.ownBooking(r, s, p); err != nil {
			return err
		}
	}
	return h.fileNote(w, r, p, &requests.Request{Action: requests.NoteAdd,
		Note: &requests.Note{Node: node, GPU: gpu, Until: until, Text: text, Replaces: replaces}}, node, gpu)
}

// POST /book/rm: free a booking (id) of one's own, or anyone's for an
// admin.
func (h *Handler) bookRemove(w http.ResponseWriter, r *http.Request, p poster) error {
	node, gpu, err := bookTarget(p.form)
	if err != nil {
		return err
	}
	id, err := h.ownBooking(r, p.form.Get("id"), p)
	if err != nil {
		return err
	}
	return h.fileNote(w, r, p, &requests.Request{Action: requests.NoteRemove, Note: &requests.Note{ID: id}}, node, gpu)
}

// ownBooking reads booking s, in force, that p's user may change: their
// own, or any for an admin. The writer checks again when it applies.
func (h *Handler) ownBooking(r *http.Request, s string, p poster) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("booking %q is not a booking's number", s)
	}
	var found *report.Note
	if err := h.withConn(r, func(c *conn) error {
		ns, err := c.rep.Notes(r.Context(), h.o.Now(), false)
		for i := range ns {
			if ns[i].ID == id {
				found = &ns[i]
			}
		}
		return err
	}); err != nil {
		return 0, err
	}
	if found == nil {
		return 0, &httpError{code: http.StatusNotFound, msg: h.tr.T("no booking %s in force: it ended or was removed", strconv.FormatInt(id, 10))}
	}
	if err := requests.CheckWebRemove(*found, p.user, p.admin); err != nil {
		// the writer's own words (requests.NotAllowed), in the reader's
		// language
		author := h.v.user(found.Author)
		return 0, &httpError{code: http.StatusForbidden, msg: h.tr.T("booked by %s; only %s or an admin can remove it", author, author)}
	}
	return id, nil
}

// fileNote files req in p's user's name and sends the browser back to
// the booking page, which says what became of it.
func (h *Handler) fileNote(w http.ResponseWriter, r *http.Request, p poster, req *requests.Request, node string, gpu *int) error {
	req.Web, req.WebAdmin, req.Cluster = p.user, p.admin, h.o.Cluster
	if err := h.file(req, p); err != nil {
		return err
	}
	q := url.Values{"node": {node}, "filed": {req.ID}}
	if gpu != nil {
		q.Set("gpu", strconv.Itoa(*gpu))
	}
	http.Redirect(w, r, bookPath+"?"+q.Encode(), http.StatusSeeOther)
	return nil
}
