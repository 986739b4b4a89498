package main

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit/logs"
	"github.com/aicloud/gpusuite/internal/testkit/loopback"
	"github.com/aicloud/gpusuite/internal/testkit/tlscert"
)

// TestCLIWatchMetricsTLS: with --web-config-file naming TLS and a user,
// watch serves /metrics over HTTPS to that user only.
func TestCLIWatchMetricsTLS(t *testing.T) {
	dir := t.TempDir()
	f := tlscert.Write(t, true, map[string]string{"prometheus": "scrape"}, "")
	addr := loopback.Addr(t)
	env := map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nbackend = \"inotify\"\n")}
	var stderr logs.Buffer
	stop := watch(t, []string{"nfs-sync", "watch", "--metrics-listen", addr, "--web-config-file", f.Path, dir}, env, &stderr)
	c := f.Client()
	get := func(user, pass string) (int, string, error) {
		code, body, _, err := tlscert.Get(c, "https://"+addr+"/metrics", user, pass)
		return code, body, err
	}
	var body string
	waitFor(t, settled, "/metrics over HTTPS", func() bool {
		code, b, err := get("prometheus", "scrape")
		body = b
		return err == nil && code == http.StatusOK
	})
	if !strings.Contains(body, "gpusuite_build_info{") {
		t.Errorf("/metrics lacks gpusuite_build_info:\n%.300s", body)
	}
	for _, tc := range []struct{ user, pass string }{{"", ""}, {"prometheus", "wrong"}} {
		if code, _, err := get(tc.user, tc.pass); err != nil || code != http.StatusUnauthorized {
			t.Errorf("login %q/%q: %d %v, want 401", tc.user, tc.pass, code, err)
		}
	}
	stop()
}
