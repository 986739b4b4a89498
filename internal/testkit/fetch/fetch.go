// Package fetch reads what a test's server serves: one GET, bounded in
// time and size, that fails the test unless the answer is 200 OK.
package fetch

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"
)

// Bounds of one Get: a generous time for a busy machine, and more bytes
// than any page or document the suite serves.
const (
	Timeout  = 30 * time.Second
	MaxBytes = 4 << 20
)

// Get returns url's body, failing the test on an error, a body over
// MaxBytes or a status other than 200.
func Get(t testing.TB, url string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBytes+1))
	switch {
	case err != nil:
		t.Fatalf("GET %s: %v", url, err)
	case len(body) > MaxBytes:
		t.Fatalf("GET %s: body over %d bytes", url, MaxBytes)
	case resp.StatusCode != http.StatusOK:
		t.Fatalf("GET %s: %s\n%s", url, resp.Status, body)
	}
	return body
}

// JSON decodes url's body (Get) into v.
func JSON(t testing.TB, url string, v any) {
	t.Helper()
	body := Get(t, url)
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", url, err, body)
	}
}
