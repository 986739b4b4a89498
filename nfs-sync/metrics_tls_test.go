package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/testkit/logs"
	"github.com/aicloud/gpusuite/internal/testkit/tlscert"
)

// TestCLIWatchMetricsTLS: with --web-config-file naming TLS and a user,
// watch serves /metrics over HTTPS to that user only.
func TestCLIWatchMetricsTLS(t *testing.T) {
	dir := t.TempDir()
	f := tlscert.Write(t, true, map[string]string{"prometheus": "scrape"}, "")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	env := map[string]string{"GPUSUITE_CONFIG": writeConfig(t, "[nfssync]\nbackend = \"inotify\"\n")}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	var stderr logs.Buffer
	go func() {
		done <- MainContext(ctx, []string{"nfs-sync", "watch", "--metrics-listen", addr, "--web-config-file", f.Path, dir}, io.Discard, &stderr, envFunc(env))
	}()
	c := f.Client()
	get := func(user, pass string) (int, string, error) {
		req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		return resp.StatusCode, string(b), nil
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
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("exit %d; stderr:\n%s", code, stderr.String())
		}
	case <-time.After(settled):
		t.Fatal("watch did not stop")
	}
}
