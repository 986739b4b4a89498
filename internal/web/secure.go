package web

import "net/http"

// contentSecurityPolicy lets the pages run only the scripts and style
// sheets of /static/: no inline script, no inline style element, no
// frame around them, no other origin. Style attributes stay allowed:
// the bars' widths and the teams' colours are data, written by
// html/template's CSS escaping into the markup, and the board's event
// stream swaps in markup that carries them.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; " +
	"img-src 'self' data:; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// Secure sets the security headers on every answer of next: the
// dashboard's, the API's, /metrics' and serve's own 503 while it waits
// for the ledger. One the web config file's http_server_config already
// set (the toolkit sets them before this handler runs) is kept.
func Secure(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		for _, kv := range securityHeaders {
			if hd.Get(kv[0]) == "" {
				hd.Set(kv[0], kv[1])
			}
		}
		next.ServeHTTP(w, r)
	})
}

// ReadOnly answers 405 to every method but GET and HEAD: nothing served
// writes (invariant: the dashboard, the API and /metrics only read). The
// one exception is a form's POST (isFormPath), which files a request for
// the ledger's writer and never writes itself (forms.go).
func ReadOnly(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && isFormPath(r.URL.Path) {
			next.ServeHTTP(w, r)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, r.Method+" is not allowed: this server only reads (GET)", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

var securityHeaders = [...][2]string{
	{"Content-Security-Policy", contentSecurityPolicy},
	{"X-Content-Type-Options", "nosniff"},
	{"X-Frame-Options", "DENY"},
	{"Referrer-Policy", "same-origin"},
	{"Cross-Origin-Opener-Policy", "same-origin"},
}
