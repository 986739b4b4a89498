package web

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/requests"
)

// The dashboard's forms (web.forms) are its only writes: a booking from
// the board (book.go) and an ignore from a job's page (jobignore.go).
// Neither touches the ledger: each files a request for the ledger's one
// writer (internal/requests), as gpuacct note and gpuacct ignore do.
// Every form is POST only, carries a token bound to its user, comes
// from this server's own pages (Origin or Referer), is bounded in size
// and rated per user.

// Bounds of the forms.
const (
	// maxFormBytes bounds a form's body: a note's text is 280
	// characters, a reason 4 KiB.
	maxFormBytes = 16 << 10
	// formRate and formBurst bound one user's posts: a person clicks a
	// few times a minute; a script is refused with 429.
	formRate  = rate.Limit(1.0 / 3)
	formBurst = 10
	// maxFormUsers bounds the users whose rate is kept; past it the
	// idlest are forgotten (a forgotten user starts with a full burst).
	maxFormUsers = 4096
	// formIdle is how long an unused user's rate is kept.
	formIdle = time.Hour
)

// forms is what the forms share: the key their tokens are made with,
// each user's rate and where requests are filed.
type forms struct {
	// secret makes the tokens: new at each start, so a page from before
	// a restart asks to be reloaded.
	secret []byte
	// dir is the writer's request directory (report.requests); uid the
	// process's, which the writer trusts (root or the service user).
	dir string
	uid int

	mu    sync.Mutex
	users map[string]*userRate
}

type userRate struct {
	lim  *rate.Limiter
	seen time.Time
}

// newForms is the forms' state, filing into dir; nil (forms off) when
// dir is "".
func newForms(dir string) (*forms, error) {
	if dir == "" {
		return nil, nil
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return nil, fmt.Errorf("web forms: token key: %w", err)
	}
	return &forms{secret: secret, dir: dir, uid: os.Geteuid(), users: map[string]*userRate{}}, nil
}

// token is user's form token: an HMAC of the name, so it needs no
// session store and no other user's page carries it.
func (f *forms) token(user string) string {
	m := hmac.New(sha256.New, f.secret)
	m.Write([]byte("gpusuite form\x00" + user))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// validToken compares in constant time: a timing must not reveal how
// much of a guess was right.
func (f *forms) validToken(user, got string) bool {
	return hmac.Equal([]byte(f.token(user)), []byte(got))
}

// allow takes one post of user from its bucket at now.
func (f *forms) allow(user string, now time.Time) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.users[user]
	if !ok {
		if len(f.users) >= maxFormUsers {
			f.forget(now)
		}
		u = &userRate{lim: rate.NewLimiter(formRate, formBurst)}
		f.users[user] = u
	}
	u.seen = now
	return u.lim.AllowN(now, 1)
}

// forget drops the users idle for formIdle, or else the idlest half:
// the map stays under maxFormUsers.
func (f *forms) forget(now time.Time) {
	for name, u := range f.users {
		if now.Sub(u.seen) > formIdle {
			delete(f.users, name)
		}
	}
	if len(f.users) < maxFormUsers {
		return
	}
	seen := make([]time.Time, 0, len(f.users))
	for _, u := range f.users {
		seen = append(seen, u.seen)
	}
	slices.SortFunc(seen, func(a, b time.Time) int { return a.Compare(b) })
	cut := seen[len(seen)/2]
	for name, u := range f.users {
		if !u.seen.After(cut) {
			delete(f.users, name)
		}
	}
}

// isFormPath reports whether path is a form's action: the only paths
// ReadOnly lets a POST through to.
func isFormPath(path string) bool {
	if path == bookAddPath || path == bookRemovePath {
		return true
	}
	rest, ok := strings.CutPrefix(path, "/job/")
	return ok && strings.HasSuffix(rest, ignoreSuffix) && strings.Count(rest, "/") == 2
}

// poster is a form post that passed the checks: who sent it, whether
// they are a web admin, and the form's fields.
type poster struct {
	user  string
	admin bool
	form  url.Values
}

// acceptPost checks a form post: the method, a logged-in user, the
// origin, the body's size, the token and the user's rate. Each refusal
// says why in one line.
func (h *Handler) acceptPost(w http.ResponseWriter, r *http.Request) (poster, error) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return poster{}, &httpError{code: http.StatusMethodNotAllowed, msg: h.tr.T("%s is not allowed: this form is sent by POST from its page", r.Method)}
	}
	if h.forms == nil {
		return poster{}, &httpError{code: http.StatusForbidden, msg: h.tr.T("the dashboard's forms are off (web.forms): use gpuacct note or gpuacct ignore on a head server")}
	}
	user, ok := h.who(r)
	if !ok {
		return poster{}, h.needLogin(w, "a form is sent in someone's name")
	}
	if err := sameOrigin(h.tr, r, h.o.TrustedProxies); err != nil {
		return poster{}, err
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
	if err := r.ParseForm(); err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return poster{}, &httpError{code: http.StatusRequestEntityTooLarge, msg: h.tr.T("the form is more than %d bytes", maxFormBytes)}
		}
		return poster{}, badRequest("the form cannot be read: %v", err)
	}
	if !h.forms.validToken(user, r.PostForm.Get("token")) {
		return poster{}, &httpError{code: http.StatusForbidden, msg: h.tr.T("the form's token is missing or not yours: reload the page and send it again")}
	}
	if !h.forms.allow(user, h.o.Now()) {
		w.Header().Set("Retry-After", "10")
		return poster{}, &httpError{code: http.StatusTooManyRequests, msg: h.tr.T("%s sent too many forms: at most %d at once, then one each %s", user, formBurst, time.Duration(float64(time.Second)/float64(formRate)).String())}
	}
	return poster{user: user, admin: h.isAdmin(user), form: r.PostForm}, nil
}

// sameOrigin refuses a post whose Origin (or, without one, Referer) is
// not this server: a page elsewhere that posts here in the user's name.
// The host is the request's, or X-Forwarded-Host from a trusted proxy.
func sameOrigin(tr *i18n.Printer, r *http.Request, proxies []netip.Prefix) error {
	host := r.Host
	if fh := r.Header.Get("X-Forwarded-Host"); fh != "" && len(proxies) > 0 && fromProxy(r, proxies) {
		host = strings.TrimSpace(strings.Split(fh, ",")[0])
	}
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		from = r.Header.Get("Referer")
	}
	if from == "" {
		return &httpError{code: http.StatusForbidden, msg: tr.T("the form carries neither Origin nor Referer: send it from the dashboard's page")}
	}
	u, err := url.Parse(from)
	if err != nil || !strings.EqualFold(u.Host, host) {
		return &httpError{code: http.StatusForbidden, msg: tr.T("the form comes from %s, not from this server (%s)", originOf(from), host)}
	}
	return nil
}

// originOf is from's scheme and host, never its path or query.
func originOf(from string) string {
	u, err := url.Parse(from)
	if err != nil || u.Host == "" {
		return "another page"
	}
	return u.Scheme + "://" + u.Host
}

// formHandler is a form's action: checked, bounded by the accounting
// slots, never cached, its refusals as pages.
func (h *Handler) formHandler(fn func(h *Handler, w http.ResponseWriter, r *http.Request, p poster) error) http.Handler {
	busy := h.pageHandler(func(http.ResponseWriter, *http.Request) error { return errBusy })
	return h.limit.wrap(uncached(h.pageHandler(func(w http.ResponseWriter, r *http.Request) error {
		hr := h.as(r).speaking(r)
		p, err := hr.acceptPost(w, r)
		if err != nil {
			return err
		}
		return fn(hr, w, r, p)
	})), busy.ServeHTTP)
}

// requestID reports whether id may name a filed request: as
// requests.Submit makes them, bounded, never a path.
func requestID(id string) bool {
	return id != "" && len(id) <= maxRequestID && strings.Trim(id, "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-") == ""
}

// outcome is what became of request id, filed by user, whose outcome
// read reads (an error while pending): pending until the writer applied
// it, the refusal (failed), else what done says of it; "" for an id that
// names no request of user's.
func outcome(id, user string, read func(string) (requests.Request, error), pending string, done func(requests.Request) (string, bool)) (string, bool) {
	if !requestID(id) {
		return "", false
	}
	out, err := read(id)
	switch {
	case err != nil:
		return pending, false
	case out.By != user:
		return "", false
	case out.Error != "":
		return strings.TrimPrefix(out.Error, "refused: "), true
	}
	return done(out)
}

// file files req for the ledger's writer in p's user's name; a failure
// is logged here and answered 503 without the server's paths.
func (h *Handler) file(req *requests.Request, p poster) error {
	host, _ := os.Hostname()
	req.By, req.UID, req.Host, req.Time = p.user, h.forms.uid, host, h.o.Now()
	if _, err := requests.Submit(h.forms.dir, req); err != nil {
		h.o.Log.Warn("web form not filed", "user", p.user, "err", err)
		return &httpError{code: http.StatusServiceUnavailable, msg: h.tr.T("the request could not be filed for the ledger's writer; try again later")}
	}
	return nil
}

// formsDir is where the forms file (report.requests), "" when web.forms
// is off.
func formsDir(cfg config.Config) string {
	if !cfg.Web.Forms {
		return ""
	}
	return cfg.Report.Requests
}
