// Package web is gpuacct serve's dashboard and JSON API: the live board
// (board.Source's view, updated through server-sent events), HTML pages
// of the accounting (the cluster overview, a team, a user, a job) and
// /api/v1/ over the same read-only report queries as gpuacct report and
// gpuacct job. It never writes the accounting database, and reads it only
// through report.Ledger, its one read model (TestReadModel). Templates, style
// sheet and script are embedded; nothing is fetched from elsewhere
// (docs/dashboard.md, docs/api.md).
//
// Files:
//   - web.go: Options, New, the routes; secure.go the security headers;
//     limits.go and client.go the request slots and who a client is;
//     private.go who may see whose names.
//   - source.go: the one read-only opening of the ledger, reopened for
//     new nodes; queries.go the dashboard's reads beyond the reports
//     (over report.Ledger) and report tables read as rows.
//   - params.go and scope.go: a request's window, filters and clusters.
//   - pages.go: the accounting pages (overview, team, user) and what
//     they share; jobpage.go and jobflight.go a job's page, its reads
//     shared by requests at once; chart.go and capacity.go the SVG
//     charts; format.go the template functions.
//   - api.go: /api/v1/ over the reports and jobs; boardapi.go the
//     board's documents (board.View.Status, Free; notes).
//   - board.go: the live board's page and fragment, rendered from a
//     board.View; events.go its event stream (a hub per viewer kind,
//     through boardRenderer).
//   - static.go: the embedded style sheet and script.
//   - forms.go: the forms' checks (token, origin, size, rate), the only
//     POSTs; book.go the booking page and actions, jobignore.go a job
//     page's ignore form: each files a request for the ledger's writer.
package web

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/budget"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/report/teams"
	"github.com/aicloud/gpusuite/internal/report/timespec"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/webconfig"
)

//go:embed templates/*.html static/*
var assets embed.FS

// Options are what the handler takes from its caller.
type Options struct {
	// DB is the accounting database, opened read-only.
	DB string
	// BusyTimeout is how long a query waits while ingest commits.
	BusyTimeout time.Duration
	// Teams is the team mapping file; "" maps each account to itself.
	Teams string
	// Location is the zone of dates and periods (report.tz).
	Location *time.Location
	// MaxAge is the Cache-Control max-age of pages and API answers.
	MaxAge time.Duration
	// Check is gpuacct check's thresholds and ingest's directories; its
	// Now is set per request.
	Check report.CheckOptions
	// Reopen is how long one read-only connection pool is used before
	// the next request opens a fresh one (new nodes appear then);
	// 0 means one minute.
	Reopen time.Duration
	// Concurrent is how many dynamic requests run at once (web.concurrent);
	// Timeout is each one's deadline (web.timeout). 0: the defaults.
	Concurrent int
	Timeout    time.Duration
	// Board is the live board; nil: its routes answer 503.
	Board *board.Source
	// BoardTick is how often the event stream looks for a change
	// (DefaultBoardTick when 0); BoardRefresh the reload period of the
	// board page without JavaScript; MaxStreams bounds the open event
	// streams (web.max_streams; DefaultMaxStreams when 0), and
	// MaxStreamsPerClient those of one client, an IPv4 address or an
	// IPv6 /64 (web.max_streams_per_client; DefaultMaxStreamsPerClient
	// when 0, no bound when negative).
	BoardTick           time.Duration
	BoardRefresh        time.Duration
	MaxStreams          int
	MaxStreamsPerClient int
	// TrustedProxies are the peers whose X-Forwarded-For names the
	// client a stream is counted against (web.trusted_proxies).
	TrustedProxies []netip.Prefix
	// Cluster is the local cluster (cluster.name): the pages' default
	// scope when several clusters share the ledger and it is one of them.
	Cluster string
	// PrivateData hides other users' names from all but Admins
	// (web.private_data); each dynamic request then needs a user, from
	// Users (basic auth through the web config file) or UserHeader
	// (web.user_header, believed from TrustedProxies, or from any peer
	// when there are none).
	PrivateData bool
	Admins      []string
	UserHeader  string
	Users       Identity
	// Roles are Slurm's account coordinators, who see their accounts'
	// users under PrivateData; nil: none.
	Roles *Roles
	// Queue is what waits for GPUs in Slurm, the board's queue table;
	// nil: no table.
	Queue *Queue
	// Budgets are the configured budgets (docs/budgets.md), FiscalStart
	// the fiscal year's first month; Leads names each team's leads
	// (notify.digest.leads), who see its budget under PrivateData.
	Budgets     []budget.Budget
	FiscalStart time.Month
	Leads       map[string][]string
	// SlurmLimits reads the associations' GrpTRESMins, shown beside the
	// budgets (at most once a minute); nil: not shown.
	SlurmLimits func(ctx context.Context) ([]budget.SlurmLimit, error)
	Now         func() time.Time
	Log         *slog.Logger

	// Requests is the writer's request directory the forms file into
	// (report.requests, when web.forms is on); "": the forms are off.
	Requests string
}

// OptionsFrom fills Options from the configuration file's sections; the
// board is src (nil: none).
func OptionsFrom(cfg config.Config, src *board.Source, log *slog.Logger, now func() time.Time) (Options, error) {
	loc, err := timespec.LoadLocation(cfg.Report.TZ)
	if err != nil {
		return Options{}, fmt.Errorf("web: %w", err)
	}
	proxies, err := cfg.Web.TrustedPrefixes()
	if err != nil {
		return Options{}, fmt.Errorf("web: %w", err)
	}
	perClient := cfg.Web.MaxStreamsPerClient
	if perClient == 0 {
		perClient = -1 // the key's 0 is no bound
	}
	budgets, err := budget.Parse(cfg.Budget.Entry, nil)
	if err != nil {
		return Options{}, fmt.Errorf("web: %w", err)
	}
	users := webconfig.NewUsers(cfg.Web.ConfigFile)
	if cfg.Web.PrivateData && cfg.Web.UserHeader == "" && !users.Any() {
		return Options{}, fmt.Errorf("web: web.private_data needs to know who asks: list basic_auth_users in web.config_file, or set web.user_header behind a reverse proxy that logs users in")
	}
	if cfg.Web.UserHeader != "" && len(proxies) == 0 {
		log.Warn("web.user_header is believed from any client: set web.trusted_proxies to the reverse proxy's address, or listen where only it can connect", "header", cfg.Web.UserHeader)
	}
	return Options{
		PrivateData: cfg.Web.PrivateData, Admins: cfg.Web.Admins, UserHeader: cfg.Web.UserHeader, Users: users,
		DB: cfg.Store.Location(), BusyTimeout: cfg.Store.BusyTimeout.Duration, Teams: cfg.Report.Teams, Location: loc,
		MaxAge: cfg.Web.MaxAge.Duration, Check: report.CheckOptionsFrom(cfg, time.Time{}),
		Concurrent: cfg.Web.Concurrent, Timeout: cfg.Web.Timeout.Duration, Now: now, Log: log,
		Board: src, BoardRefresh: boardRefresh(cfg.Agent.Interval.Duration), MaxStreams: cfg.Web.MaxStreams,
		MaxStreamsPerClient: perClient, TrustedProxies: proxies, Cluster: cfg.Cluster.Name,
		Budgets: budgets, FiscalStart: time.Month(cfg.Budget.FiscalStart), Leads: cfg.Notify.Digest.Leads,
		SlurmLimits: slurmLimitsOf(cfg, budgets), Requests: formsDir(cfg),
	}, nil
}

// boardRefresh is the board page's reload period without a script: two
// agent intervals, so that each reload shows a new snapshot, at least 10 s.
func boardRefresh(agentInterval time.Duration) time.Duration {
	return max(10*time.Second, 2*agentInterval)
}

// Handler serves the dashboard, its static files and /api/v1/.
type Handler struct {
	o       Options
	src     *source
	mapping *teams.Mapping
	pages   map[string]*template.Template
	static  *staticFiles
	mux     *http.ServeMux
	// limit admits accounting requests, live the board's and health's:
	// each class has its slots, and the live one its own database pool
	// (liveSrc), so that accounting requests filling theirs never starve it.
	limit, live *limiter
	liveSrc     *source
	// jobRead shares one job's detail among the requests reading it at once.
	jobRead *jobFlight
	// slurm keeps the associations' limits a minute (SlurmLimits).
	slurm *slurmLimits
	hub   *hub
	// anonHub streams the board with every user's name hidden, to
	// those web.private_data hides names from.
	anonHub *hub
	// v is whose eyes h renders for (as).
	v viewer
	// forms are the dashboard's forms (web.forms); nil: off.
	forms *forms
	// tr is the language h renders in, pages its templates; spoken
	// holds each language's (speaking picks one per request).
	tr     *i18n.Printer
	cat    *i18n.Catalog
	spoken map[string]spokenPages
}

// spokenPages are the templates of one language, its printer bound in,
// and the board's event streams in it (with names and without).
type spokenPages struct {
	tr           *i18n.Printer
	pages        map[string]*template.Template
	hub, anonHub *hub
}

// New builds the handler: templates are parsed and the team mapping is
// read here; the database is opened at the first request (serve creates
// it at start), so an unreadable database is a 503, not a start failure.
func New(o Options) (*Handler, error) {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Location == nil {
		o.Location = time.Local
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	if o.Reopen <= 0 {
		o.Reopen = time.Minute
	}
	if o.BoardRefresh <= 0 {
		o.BoardRefresh = boardRefresh(0)
	}
	m, err := teams.Load(o.Teams)
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	cat, err := i18n.New()
	if err != nil {
		return nil, fmt.Errorf("web: %w", err)
	}
	spoken := map[string]spokenPages{}
	for _, lang := range cat.Languages() {
		tr := cat.Printer(lang)
		p, err := parsePages(tr)
		if err != nil {
			return nil, err
		}
		spoken[tr.Lang()] = spokenPages{tr: tr, pages: p}
	}
	pages := spoken["en"].pages
	st, err := newStatic()
	if err != nil {
		return nil, err
	}
	h := &Handler{o: o, src: newSource(o), liveSrc: newSource(o), mapping: m, pages: pages, static: st, mux: http.NewServeMux(),
		limit: newLimiter(o.Concurrent, o.Timeout), live: newLimiter(LiveConcurrent, o.Timeout), jobRead: newJobFlight(), slurm: &slurmLimits{},
		tr: spoken["en"].tr, cat: cat, spoken: spoken}
	h.limit.perClient, h.limit.trusted = perClientOf(o.Concurrent), o.TrustedProxies
	if h.forms, err = newForms(o.Requests); err != nil {
		return nil, err
	}
	// one bound for every stream, with names or without
	slots := newStreamSlots(o.MaxStreams, o.MaxStreamsPerClient)
	h.hub = newHub(hubOptions{src: o.Board, render: h, now: o.Now, tick: o.BoardTick,
		slots: slots, log: o.Log.Warn})
	if o.PrivateData {
		anon := h.anonymous()
		h.anonHub = newHub(hubOptions{src: o.Board, render: anon, now: o.Now, tick: o.BoardTick,
			slots: slots, log: o.Log.Warn})
	}
	// Each other language streams its own board: a hub renders only
	// while someone watches it.
	for lang, sp := range spoken {
		if sp.tr == h.tr {
			sp.hub, sp.anonHub = h.hub, h.anonHub
		} else {
			c := h.in(sp)
			sp.hub = newHub(hubOptions{src: o.Board, render: c, now: o.Now, tick: o.BoardTick, slots: slots, log: o.Log.Warn})
			if o.PrivateData {
				sp.anonHub = newHub(hubOptions{src: o.Board, render: c.anonymous(), now: o.Now, tick: o.BoardTick, slots: slots, log: o.Log.Warn})
			}
		}
		spoken[lang] = sp
	}
	h.routes()
	return h, nil
}

// Close ends the event streams and closes the database connections.
func (h *Handler) Close() error {
	h.EndStreams()
	return errors.Join(h.src.close(), h.liveSrc.close())
}

// EndStreams ends the open event streams and refuses new ones: an
// http.Server's Shutdown waits for handlers, and a stream never ends by
// itself.
func (h *Handler) EndStreams() {
	for _, sp := range h.spoken {
		sp.hub.close()
		if sp.anonHub != nil {
			sp.anonHub.close()
		}
	}
}

func (h *Handler) routes() {
	busyPage := h.pageHandler(func(http.ResponseWriter, *http.Request) error { return errBusy })
	busyAPI := h.apiHandler(func(http.ResponseWriter, *http.Request) error { return errBusy })
	// Each handler runs on h as the request's viewer sees it (as).
	type method = func(*Handler, http.ResponseWriter, *http.Request) error
	bind := func(fn method) func(w http.ResponseWriter, r *http.Request) error {
		return func(w http.ResponseWriter, r *http.Request) error { return fn(h.as(r).speaking(r), w, r) }
	}
	page := func(pattern string, fn method) {
		h.mux.Handle(pattern, h.limit.wrap(h.cached(h.pageHandler(bind(fn))), busyPage.ServeHTTP))
	}
	api := func(pattern string, fn method) {
		h.mux.Handle(pattern, h.limit.wrap(h.cached(h.apiHandler(bind(fn))), busyAPI.ServeHTTP))
	}
	// The live board changes every second: a kept copy would show
	// booked or busy GPUs free for max_age. It runs on the live slots.
	livePage := func(pattern string, fn method) {
		h.mux.Handle(pattern, h.live.wrap(uncached(h.pageHandler(bind(fn))), busyPage.ServeHTTP))
	}
	liveAPI := func(pattern string, fn method) {
		h.mux.Handle(pattern, h.live.wrap(uncached(h.apiHandler(bind(fn))), busyAPI.ServeHTTP))
	}
	livePage("GET /{$}", (*Handler).boardPage)
	page("GET /accounting", (*Handler).overview)
	page("GET /team/{team}", (*Handler).teamPage)
	page("GET /team/{team}/budget", (*Handler).budgetPage)
	page("GET /user/{user}", (*Handler).userPage)
	page("GET /job/{cluster}/{id}", (*Handler).jobPage)
	page("GET /me", (*Handler).mePage)
	page("GET "+bookPath, (*Handler).bookPage)
	h.mux.Handle(bookAddPath, h.formHandler((*Handler).bookAdd))
	h.mux.Handle(bookRemovePath, h.formHandler((*Handler).bookRemove))
	h.mux.Handle("/job/{cluster}/{id}"+ignoreSuffix, h.formHandler((*Handler).jobIgnore))
	h.mux.Handle("GET /static/", h.static)
	// Health is what monitoring probes: live slots, cached as before.
	h.mux.Handle("GET /api/v1/health", h.live.wrap(h.cached(h.apiHandler(bind((*Handler).apiHealth))), busyAPI.ServeHTTP))
	api("GET /api/v1/report/{kind}", (*Handler).apiReport)
	api("GET /api/v1/jobs", (*Handler).apiJobs)
	api("GET /api/v1/jobs/running", (*Handler).apiRunning)
	api("GET /api/v1/jobs/{cluster}/{id}", (*Handler).apiJob)
	api("GET /api/v1/jobs/{cluster}/{id}/series", (*Handler).apiSeries)
	api("GET /api/v1/nodes", (*Handler).apiNodes)
	liveAPI("GET /api/v1/board", (*Handler).apiBoard)
	liveAPI("GET /api/v1/free", (*Handler).apiFree)
	api("GET /api/v1/notes", (*Handler).apiNotes)
	api("GET /api/v1/budget/{team}", (*Handler).apiBudget)
	api("GET /api/v1/me/jobs", (*Handler).apiMyJobs)
	// The stream is outside the limiter: it would hold a query slot for
	// its whole life. The hub bounds the streams instead.
	h.mux.HandleFunc("GET "+eventsPath, func(w http.ResponseWriter, r *http.Request) { h.speaking(r).boardEvents(w, r) })
	h.mux.Handle("/api/", h.apiHandler(func(w http.ResponseWriter, r *http.Request) error {
		return &httpError{code: http.StatusNotFound, msg: fmt.Sprintf("no API route %s %s (see docs/api.md)", r.Method, r.URL.Path)}
	}))
	page("/", func(_ *Handler, w http.ResponseWriter, r *http.Request) error {
		return &httpError{code: http.StatusNotFound, msg: "no page " + r.URL.Path}
	})
}

// speaking is h rendering in the language r's browser asks for
// (Accept-Language), English when it asks for none spoken.
func (h *Handler) speaking(r *http.Request) *Handler {
	lang := h.cat.Accept(r.Header.Get("Accept-Language")).String()
	if lang == h.tr.Lang() {
		return h
	}
	return h.in(h.spoken[lang])
}

// in is h rendering in sp's language, streaming sp's board.
func (h *Handler) in(sp spokenPages) *Handler {
	c := *h
	c.tr, c.pages, c.hub, c.anonHub = sp.tr, sp.pages, sp.hub, sp.anonHub
	return &c
}

// ServeHTTP serves a request, gzip-compressed when the client takes it.
// Under web.private_data every answer but the static files needs a user.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var next http.Handler = h.mux
	if r.URL.Path != eventsPath {
		next = gzipped(h.mux) // a stream is flushed event by event, not compressed
	}
	if !strings.HasPrefix(r.URL.Path, "/static/") {
		next = h.private(next)
	}
	next.ServeHTTP(w, r)
}

// cached sets the caching headers of dynamic answers: they may be kept
// for MaxAge by the browser only (they name users).
func (h *Handler) cached(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", fmt.Sprintf("private, max-age=%d", int(h.o.MaxAge.Seconds())))
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// uncached marks the live board's answers as never to be kept.
func uncached(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// httpError is an error with its HTTP status; other errors from the
// database are 503.
type httpError struct {
	code int
	msg  string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) error {
	return &httpError{code: http.StatusBadRequest, msg: fmt.Sprintf(format, args...)}
}

// status is the HTTP status of an error a handler returned.
func status(err error) int {
	var he *httpError
	if errors.As(err, &he) {
		return he.code
	}
	if report.IsBadInput(err) {
		return http.StatusBadRequest
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return http.StatusServiceUnavailable
	}
	return http.StatusServiceUnavailable
}

// cleanMsg is an error as an HTTP client sees it: the CLI's "--start"
// spelled as the query parameter "start".
func cleanMsg(err error) string {
	return strings.ReplaceAll(err.Error(), "--", "")
}

func (h *Handler) logFailure(r *http.Request, code int, err error) {
	if code >= 500 {
		h.o.Log.Warn("web request failed", "path", r.URL.Path, "status", code, "err", err)
	}
}

// Mount adds the dashboard to gpuacct serve: on the /metrics listener
// through handle when web.listen is empty, else on a listener of its own.
// The returned stop closes what Mount opened. src is the live board (nil:
// off); the board's event streams end when ctx does, so that the
// server's shutdown does not wait on them.
func Mount(ctx context.Context, cfg config.Config, src *board.Source, handle func(string, http.Handler), log *slog.Logger) (stop func(), err error) {
	if !cfg.Web.Enabled {
		return func() {}, nil
	}
	o, err := OptionsFrom(cfg, src, log, time.Now)
	if err != nil {
		return nil, err
	}
	if (cfg.Web.PrivateData || cfg.Web.Forms) && cfg.Ingest.Sacctmgr != "" {
		o.Roles = NewRoles(cfg.Ingest.Sacctmgr, cfg.Board.SlurmTimeout.Duration, log)
		go o.Roles.Run(ctx)
	}
	if src != nil && cfg.Board.SlurmFile == "" {
		r := slurmstate.Reader{Timeout: cfg.Board.SlurmTimeout.Duration}
		o.Queue = NewQueue(r.Queue, log)
		go o.Queue.Run(ctx)
	}
	h, err := New(o)
	if err != nil {
		return nil, err
	}
	context.AfterFunc(ctx, h.EndStreams)
	if cfg.Web.Listen == "" || cfg.Web.Listen == cfg.Ingest.MetricsListen {
		if cfg.Ingest.MetricsListen == "" {
			log.Warn("web dashboard not served: web.listen and ingest.metrics_listen are both empty")
		} else {
			log.Info("web dashboard", "listen", cfg.Ingest.MetricsListen, "shared_with", "/metrics")
		}
		handle("/", h)
		return func() { _ = h.Close() }, nil
	}
	ln, err := net.Listen("tcp", cfg.Web.Listen)
	if err != nil {
		h.Close()
		return nil, fmt.Errorf("web listen %q: %w", cfg.Web.Listen, err)
	}
	srv := NewServer(Secure(ReadOnly(h)), o.Timeout)
	webconfig.Start(ln, srv, cfg.Web.ConfigFile, log, "web dashboard")
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
		_ = h.Close()
	}, nil
}
