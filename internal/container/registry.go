package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
)

// dockerHub is the host enroot pulls from when a reference names no
// registry; docker.io and index.docker.io are its other names.
const dockerHub = "registry-1.docker.io"

// manifestAccept is what enroot asks a registry for: Docker v2s2 and OCI
// manifests and their lists, so a tag that exists only as one of them is
// still found.
var manifestAccept = []string{
	"application/vnd.docker.distribution.manifest.v2+json",
	"application/vnd.docker.distribution.manifest.list.v2+json",
	"application/vnd.oci.image.manifest.v1+json",
	"application/vnd.oci.image.index.v1+json",
}

// RegistryRef is where an image's manifest lives, as enroot asks for it.
type RegistryRef struct {
	// Host is the registry's host[:port] (registry-1.docker.io for Docker Hub).
	Host string
	// Repo is the repository path, with library/ for Docker Hub's
	// single-name images.
	Repo string
	// Reference is the tag, or the digest when one is given.
	Reference string
}

// RegistryRef returns where img's manifest lives; ok is false for a squashfs
// file, which has no registry.
func (i Image) RegistryRef() (r RegistryRef, ok bool) {
	if i.Path != "" {
		return RegistryRef{}, false
	}
	r = RegistryRef{Host: i.Registry, Repo: i.Repo, Reference: i.ResolvedTag()}
	switch r.Host {
	case "", "docker.io", "index.docker.io":
		r.Host = dockerHub
		if !strings.Contains(r.Repo, "/") {
			r.Repo = "library/" + r.Repo
		}
	}
	if i.Digest != "" {
		r.Reference = i.Digest
	}
	return r, true
}

// Name is the repository as a user writes it: nvcr.io/nvidia/pytorch,
// docker.io/library/ubuntu.
func (r RegistryRef) Name() string {
	if r.Host == dockerHub {
		return "docker.io/" + r.Repo
	}
	return r.Host + "/" + r.Repo
}

// RegistryQuery is how to ask a registry about an image the way enroot
// will when it pulls it.
type RegistryQuery struct {
	// Client makes the requests; the caller's context bounds them.
	Client *http.Client
	// Creds are the user's enroot credentials, CredPath their file (named
	// in messages).
	Creds    []Credential
	CredPath string
	// HTTP asks over plain HTTP, as enroot does with ENROOT_ALLOW_HTTP.
	HTTP bool
}

// maxAuthBody bounds a token answer: registries' tokens are a few KiB.
const maxAuthBody = 1 << 20

// CheckRegistry asks img's registry whether its tag (or digest) exists
// and the user's credentials may pull it, with the same authentication
// enroot uses: none, Basic with the credentials of the registry's host, or
// a Bearer token from the realm the registry names, fetched with the
// credentials of the realm's host. It returns nil when the pull can work
// or there is nothing to ask, a Fail finding for a missing tag or refused
// credentials, and a Warn finding when the registry cannot be reached (the
// pull may still work from the GPU servers).
func CheckRegistry(ctx context.Context, q RegistryQuery, img Image) *Finding {
	r, ok := img.RegistryRef()
	if !ok {
		return nil
	}
	scheme := "https"
	if q.HTTP {
		scheme = "http"
	}
	manifest := scheme + "://" + r.Host + "/v2/" + r.Repo + "/manifests/" + r.Reference
	resp, err := q.head(ctx, manifest, "")
	if err != nil {
		return unreachable(r, err)
	}
	sent := false // whether credentials were sent, for what a refusal means
	// machine is the credentials entry the login comes from: the
	// registry's host for Basic, the token service's for Bearer.
	machine := hostOnly(r.Host)
	if resp.StatusCode == http.StatusUnauthorized {
		kind, params := parseChallenge(resp.Header.Get("WWW-Authenticate"))
		var auth string
		switch kind {
		case "basic":
			c, found := q.lookup(machine, img.User)
			if !found {
				return anonymousRefused(r, q.CredPath, machine)
			}
			auth, sent = "Basic "+basic(c), true
		case "bearer":
			token, usedCreds, f := q.token(ctx, r, params, img.User)
			if f != nil {
				return f
			}
			if u, err := url.Parse(params["realm"]); err == nil {
				machine = u.Hostname()
			}
			auth, sent = "Bearer "+token, usedCreds
		default:
			return &Finding{Level: Warn, Check: "registry", Msg: fmt.Sprintf("%s asks for an authentication sbuild does not know (%q); %s not checked", r.Host, kind, r.Name()+":"+r.Reference)}
		}
		if resp, err = q.head(ctx, manifest, auth); err != nil {
			return unreachable(r, err)
		}
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusNotFound:
		what := "tag " + r.Reference
		if strings.HasPrefix(r.Reference, "sha256:") {
			what = "digest " + r.Reference
		}
		return &Finding{Level: Fail, Check: "registry", Msg: fmt.Sprintf("%s not found in %s", what, r.Name())}
	case http.StatusUnauthorized, http.StatusForbidden:
		if !sent {
			return anonymousRefused(r, q.CredPath, machine)
		}
		return refused(r, q.CredPath, machine)
	}
	return &Finding{Level: Warn, Check: "registry", Msg: fmt.Sprintf("%s answered %s for %s:%s; not checked", r.Host, resp.Status, r.Name(), r.Reference)}
}

// head sends a HEAD for a manifest (it costs no pull on Docker Hub's rate
// limit) and drops the body.
func (q RegistryQuery) head(ctx context.Context, u, auth string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodHead, u, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", strings.Join(manifestAccept, ", "))
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := q.Client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	return resp, nil
}

// token fetches a Bearer token from the realm the registry named, as
// enroot does: with the credentials of the realm's host when there are
// some, anonymously otherwise.
func (q RegistryQuery) token(ctx context.Context, r RegistryRef, params map[string]string, user string) (token string, usedCreds bool, f *Finding) {
	realm, err := url.Parse(params["realm"])
	if err != nil || realm.Host == "" || (realm.Scheme != "https" && realm.Scheme != "http") {
		return "", false, &Finding{Level: Warn, Check: "registry", Msg: fmt.Sprintf("%s names no usable token realm (%q); %s not checked", r.Host, params["realm"], r.Name())}
	}
	v := realm.Query()
	if s := params["service"]; s != "" {
		v.Set("service", s)
	}
	scope := params["scope"]
	if scope == "" {
		scope = "repository:" + r.Repo + ":pull"
	}
	v.Set("scope", scope)
	realm.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, realm.String(), nil)
	if err != nil {
		return "", false, unreachable(r, err)
	}
	c, found := q.lookup(realm.Hostname(), user)
	if found {
		req.Header.Set("Authorization", "Basic "+basic(c))
	}
	resp, err := q.Client.Do(req)
	if err != nil {
		return "", false, unreachable(r, err)
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		if found {
			return "", true, refused(r, q.CredPath, realm.Hostname())
		}
		return "", false, anonymousRefused(r, q.CredPath, realm.Hostname())
	case resp.StatusCode != http.StatusOK:
		return "", false, &Finding{Level: Warn, Check: "registry", Msg: fmt.Sprintf("the token service of %s answered %s; %s not checked", r.Host, resp.Status, r.Name())}
	}
	var body struct {
		Token       string `json:"token"`
		AccessToken string `json:"access_token"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxAuthBody)).Decode(&body); err != nil {
		return "", false, &Finding{Level: Warn, Check: "registry", Msg: fmt.Sprintf("the token service of %s sent no readable token (%v); %s not checked", r.Host, err, r.Name())}
	}
	if body.Token == "" {
		body.Token = body.AccessToken
	}
	return body.Token, found, nil
}

// lookup finds the credentials for host as curl reads a netrc file (which
// is how enroot hands them over): the host without its port, then the
// default entry. With enroot's USER@ the login must match too.
func (q RegistryQuery) lookup(host, user string) (Credential, bool) {
	var def *Credential
	for i, c := range q.Creds {
		if user != "" && c.Login != user {
			continue
		}
		if c.Machine == host {
			return c, true
		}
		if c.Machine == "default" && def == nil {
			def = &q.Creds[i]
		}
	}
	if def != nil {
		return *def, true
	}
	return Credential{}, false
}

func basic(c Credential) string {
	req := http.Request{Header: http.Header{}}
	req.SetBasicAuth(c.Login, c.Password)
	return strings.TrimPrefix(req.Header.Get("Authorization"), "Basic ")
}

func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return hostport
}

// parseChallenge reads a WWW-Authenticate header: its scheme, lower-cased,
// and its key="value" parameters.
func parseChallenge(h string) (scheme string, params map[string]string) {
	params = map[string]string{}
	h = strings.TrimSpace(h)
	scheme, rest, _ := strings.Cut(h, " ")
	for rest = strings.TrimSpace(rest); rest != ""; rest = strings.TrimLeft(strings.TrimSpace(rest), ",") {
		key, after, ok := strings.Cut(rest, "=")
		if !ok {
			break
		}
		key = strings.ToLower(strings.TrimSpace(key))
		after = strings.TrimSpace(after)
		var val string
		if strings.HasPrefix(after, `"`) {
			end := strings.Index(after[1:], `"`)
			if end < 0 {
				val, rest = after[1:], ""
			} else {
				val, rest = after[1:1+end], after[2+end:]
			}
		} else {
			val, rest, _ = strings.Cut(after, ",")
		}
		params[key] = val
		rest = strings.TrimSpace(rest)
	}
	return strings.ToLower(scheme), params
}

// refused and anonymousRefused name the credentials entry to fix: machine,
// the host enroot's curl sends the login to.
func refused(r RegistryRef, credPath, machine string) *Finding {
	if r.Host == "nvcr.io" {
		return &Finding{Level: Fail, Check: "registry", Msg: "nvcr.io refused your credentials: run sbuild login"}
	}
	return &Finding{Level: Fail, Check: "registry", Msg: fmt.Sprintf("%s refused your credentials: fix the \"machine %s\" line in %s", r.Host, machine, credPath)}
}

func anonymousRefused(r RegistryRef, credPath, machine string) *Finding {
	if r.Host == "nvcr.io" {
		return &Finding{Level: Fail, Check: "registry", Msg: "nvcr.io asks for credentials and you have none: run sbuild login"}
	}
	return &Finding{Level: Fail, Check: "registry", Msg: fmt.Sprintf("%s refused an anonymous pull of %s: it does not exist, or it needs a \"machine %s login USER password SECRET\" line in %s", r.Host, r.Name(), machine, credPath)}
}

// unreachable is a warning: the head server may not reach a registry the
// GPU servers reach (a proxy, a firewall), so the build goes on.
func unreachable(r RegistryRef, err error) *Finding {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	if errors.Is(err, context.DeadlineExceeded) {
		err = errors.New("no answer in time")
	}
	return &Finding{Level: Warn, Check: "registry", Msg: fmt.Sprintf("cannot reach %s to check %s:%s (%v): not checked; the pull may still work from the GPU servers", r.Host, r.Name(), r.Reference, err)}
}
