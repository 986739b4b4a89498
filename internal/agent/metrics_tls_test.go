package agent

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit/tlscert"
)

// TestMetricsTLSAndLogin: with agent.web_config_file naming TLS and a
// user, /metrics answers over HTTPS only to that user's password.
func TestMetricsTLSAndLogin(t *testing.T) {
	f := tlscert.Write(t, true, map[string]string{"prometheus": "scrape"}, "")
	cfg := testConfig(t.TempDir())
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Agent.MetricsListen = ln.Addr().String()
	ln.Close()
	cfg.Agent.WebConfigFile = f.Path
	startRunningWith(t, cfg)

	c := f.Client()
	get := func(user, pass string) (int, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, "https://"+cfg.Agent.MetricsListen+"/metrics", nil)
		if err != nil {
			t.Fatal(err)
		}
		if user != "" {
			req.SetBasicAuth(user, pass)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("GET /metrics: %v", err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
		return resp.StatusCode, string(b)
	}
	if code, _ := get("", ""); code != http.StatusUnauthorized {
		t.Errorf("no login: %d, want 401", code)
	}
	if code, _ := get("prometheus", "wrong"); code != http.StatusUnauthorized {
		t.Errorf("wrong password: %d, want 401", code)
	}
	code, body := get("prometheus", "scrape")
	if code != http.StatusOK || !strings.Contains(body, "gpusuite_") {
		t.Errorf("logged in: %d, body without gpusuite_ metrics:\n%.300s", code, body)
	}
}
