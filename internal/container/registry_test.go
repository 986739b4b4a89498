package container

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/testkit/registry"
)

func TestImageRegistryRef(t *testing.T) {
	digest := "sha256:" + strings.Repeat("ab", 32)
	for _, tc := range []struct {
		in   string
		want RegistryRef
		name string
	}{
		{"ubuntu", RegistryRef{Host: "registry-1.docker.io", Repo: "library/ubuntu", Reference: "latest"}, "docker.io/library/ubuntu"},
		{"ubuntu:22.04", RegistryRef{Host: "registry-1.docker.io", Repo: "library/ubuntu", Reference: "22.04"}, "docker.io/library/ubuntu"},
		{"docker.io/ubuntu:22.04", RegistryRef{Host: "registry-1.docker.io", Repo: "library/ubuntu", Reference: "22.04"}, "docker.io/library/ubuntu"},
		{"pytorch/pytorch:2.3.0", RegistryRef{Host: "registry-1.docker.io", Repo: "pytorch/pytorch", Reference: "2.3.0"}, "docker.io/pytorch/pytorch"},
		{"nvcr.io/nvidia/tensorflow:24.01-tf2-py3", RegistryRef{Host: "nvcr.io", Repo: "nvidia/tensorflow", Reference: "24.01-tf2-py3"}, "nvcr.io/nvidia/tensorflow"},
		{"nvcr.io#nvidia/tensorflow:24.01-tf2-py3", RegistryRef{Host: "nvcr.io", Repo: "nvidia/tensorflow", Reference: "24.01-tf2-py3"}, "nvcr.io/nvidia/tensorflow"},
		{"alice@nvcr.io#nvidia/tensorflow", RegistryRef{Host: "nvcr.io", Repo: "nvidia/tensorflow", Reference: "latest"}, "nvcr.io/nvidia/tensorflow"},
		{"localhost:5000/team/img:v1", RegistryRef{Host: "localhost:5000", Repo: "team/img", Reference: "v1"}, "localhost:5000/team/img"},
		{"127.0.0.1:5000#img", RegistryRef{Host: "127.0.0.1:5000", Repo: "img", Reference: "latest"}, "127.0.0.1:5000/img"},
		{"ghcr.io/org/img:1@" + digest, RegistryRef{Host: "ghcr.io", Repo: "org/img", Reference: digest}, "ghcr.io/org/img"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			img, err := ParseImage(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := img.RegistryRef()
			if !ok {
				t.Fatal("no registry")
			}
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if got.Name() != tc.name {
				t.Errorf("Name() = %q, want %q", got.Name(), tc.name)
			}
		})
	}
	if _, ok := (Image{Path: "/x.sqsh"}).RegistryRef(); ok {
		t.Error("a squashfs file has a registry")
	}
}

func TestParseChallenge(t *testing.T) {
	for _, tc := range []struct {
		in     string
		scheme string
		params map[string]string
	}{
		{`Basic realm="gpusuite-test"`, "basic", map[string]string{"realm": "gpusuite-test"}},
		{`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull"`, "bearer",
			map[string]string{"realm": "https://auth.docker.io/token", "service": "registry.docker.io", "scope": "repository:library/ubuntu:pull"}},
		{`Bearer realm="https://nvcr.io/proxy_auth", scope="repository:nvidia/a,b:pull"`, "bearer",
			map[string]string{"realm": "https://nvcr.io/proxy_auth", "scope": "repository:nvidia/a,b:pull"}},
		{`bearer realm=https://x/token,service=x`, "bearer", map[string]string{"realm": "https://x/token", "service": "x"}},
		{``, "", map[string]string{}},
	} {
		t.Run(tc.in, func(t *testing.T) {
			s, p := parseChallenge(tc.in)
			if s != tc.scheme {
				t.Errorf("scheme %q, want %q", s, tc.scheme)
			}
			if d := cmp.Diff(tc.params, p); d != "" {
				t.Errorf("params (-want +got):\n%s", d)
			}
		})
	}
}

func TestCredentialLookup(t *testing.T) {
	creds, err := ParseCredentials("machine nvcr.io login $oauthtoken password K1\nmachine 127.0.0.1 login bob password B\nmachine 127.0.0.1 login alice password A\ndefault login anon password D\n")
	if err != nil {
		t.Fatal(err)
	}
	q := RegistryQuery{Creds: creds}
	for _, tc := range []struct {
		host, user string
		want       string
		ok         bool
	}{
		{"nvcr.io", "", "$oauthtoken:K1", true},
		{"127.0.0.1", "", "bob:B", true},
		{"127.0.0.1", "alice", "alice:A", true},
		{"ghcr.io", "", "anon:D", true},
		{"ghcr.io", "carol", "", false},
	} {
		t.Run(tc.host+"/"+tc.user, func(t *testing.T) {
			c, ok := q.lookup(tc.host, tc.user)
			if got := c.Login + ":" + c.Password; ok != tc.ok || (ok && got != tc.want) {
				t.Errorf("lookup = %q, %v; want %q, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

// TestCheckRegistry asks real registries (TLS; htpasswd logins, or Bearer
// tokens from a token service) about an image pushed to them, as sbuild
// does before it submits a build.
func TestCheckRegistry(t *testing.T) {
	for _, auth := range []struct {
		name  string
		start func(testing.TB) *registry.Registry
	}{{"basic", registry.Start}, {"token", registry.StartToken}} {
		t.Run(auth.name, func(t *testing.T) {
			reg := auth.start(t)
			reg.Push(t, "ns/img", "1.0")
			checkRegistry(t, reg)
		})
	}
}

func checkRegistry(t *testing.T, reg *registry.Registry) {
	good := []Credential{{Machine: "127.0.0.1", Login: reg.User, Password: reg.Password}}
	bad := []Credential{{Machine: "127.0.0.1", Login: reg.User, Password: "wrong"}}
	down := registry.FreeAddr(t)
	for _, tc := range []struct {
		name  string
		image string
		creds []Credential
		level Level // -1: no finding
		msg   string
	}{
		{"good tag, good credentials", reg.Addr + "/ns/img:1.0", good, -1, ""},
		{"enroot's form", reg.Addr + "#ns/img:1.0", good, -1, ""},
		{"default entry", reg.Addr + "/ns/img:1.0", []Credential{{Machine: "default", Login: reg.User, Password: reg.Password}}, -1, ""},
		{"enroot's USER@", reg.User + "@" + reg.Addr + "#ns/img:1.0", append([]Credential{{Machine: "127.0.0.1", Login: "bob", Password: "x"}}, good...), -1, ""},
		{"bad tag", reg.Addr + "/ns/img:99.99-typo", good, Fail, "tag 99.99-typo not found in " + reg.Addr + "/ns/img"},
		{"no such repository", reg.Addr + "/ns/nope:1.0", good, Fail, "tag 1.0 not found in " + reg.Addr + "/ns/nope"},
		{"bad credentials", reg.Addr + "/ns/img:1.0", bad, Fail, reg.Addr + " refused your credentials: fix the \"machine 127.0.0.1\" line in CREDS"},
		{"no credentials", reg.Addr + "/ns/img:1.0", nil, Fail, reg.Addr + " refused an anonymous pull of " + reg.Addr + "/ns/img"},
		{"registry down", down + "/ns/img:1.0", good, Warn, "cannot reach " + down + " to check " + down + "/ns/img:1.0 ("},
	} {
		t.Run(tc.name, func(t *testing.T) {
			img, err := ParseImage(tc.image)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			f := CheckRegistry(ctx, RegistryQuery{Client: reg.Client(0), Creds: tc.creds, CredPath: "CREDS"}, img)
			if tc.level < 0 {
				if f != nil {
					t.Fatalf("finding %+v, want none", *f)
				}
				return
			}
			if f == nil {
				t.Fatalf("no finding, want %v %q", tc.level, tc.msg)
			}
			if f.Level != tc.level || !strings.HasPrefix(f.Line(), tc.msg) || strings.Contains(f.Line(), "\n") {
				t.Errorf("finding %v %q, want %v starting %q", f.Level, f.Line(), tc.level, tc.msg)
			}
		})
	}
	t.Run("no answer in time", func(t *testing.T) {
		img, _ := ParseImage(reg.Addr + "/ns/img:1.0")
		ctx, cancel := context.WithTimeout(context.Background(), time.Nanosecond)
		defer cancel()
		<-ctx.Done()
		f := CheckRegistry(ctx, RegistryQuery{Client: reg.Client(0), Creds: good}, img)
		if f == nil || f.Level != Warn || !strings.Contains(f.Msg, "no answer in time") {
			t.Errorf("finding %+v, want a warning", f)
		}
	})
}

func TestRegistryMessages(t *testing.T) {
	ngc := RegistryRef{Host: "nvcr.io", Repo: "nvidia/tensorflow", Reference: "24.01-tf2-py3"}
	hub := RegistryRef{Host: "registry-1.docker.io", Repo: "library/ubuntu", Reference: "22.04"}
	for _, tc := range []struct {
		name string
		f    *Finding
		want string
	}{
		{"ngc refused", refused(ngc, "C", "nvcr.io"), "nvcr.io refused your credentials: run sbuild login"},
		{"ngc anonymous", anonymousRefused(ngc, "C", "nvcr.io"), "nvcr.io asks for credentials and you have none: run sbuild login"},
		{"hub anonymous", anonymousRefused(hub, "C", "auth.docker.io"), `registry-1.docker.io refused an anonymous pull of docker.io/library/ubuntu: it does not exist, or it needs a "machine auth.docker.io login USER password SECRET" line in C`},
		{"hub refused", refused(hub, "C", "auth.docker.io"), `registry-1.docker.io refused your credentials: fix the "machine auth.docker.io" line in C`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.f.Level != Fail || tc.f.Line() != tc.want {
				t.Errorf("%v %q, want error %q", tc.f.Level, tc.f.Line(), tc.want)
			}
		})
	}
}
