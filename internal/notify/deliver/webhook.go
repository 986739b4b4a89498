package deliver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"
)

// Webhook formats.
const (
	// FormatSlack posts {"text": ...}, which Slack's and Mattermost's
	// incoming webhooks take.
	FormatSlack = "slack"
	// FormatJSON posts Post as it is.
	FormatJSON = "json"
)

// Webhook is an incoming webhook to post to.
type Webhook struct {
	URL    string
	Format string
	// Timeout bounds one post, connection to answer; 10 s when 0.
	Timeout time.Duration
	// Client is the HTTP client (tests: a loopback server's); nil: one
	// of the standard library's with Timeout.
	Client *http.Client
}

// Post is what a webhook receives in FormatJSON.
type Post struct {
	Key     string `json:"key"`
	Rule    string `json:"rule"`
	Cluster string `json:"cluster,omitempty"`
	Job     *int64 `json:"job,omitempty"`
	User    string `json:"user,omitempty"`
	Subject string `json:"subject"`
	Body    string `json:"body"`
}

// maxAnswer bounds how much of a webhook's answer is read (for its error).
const maxAnswer = 4 << 10

// Send posts p to w. An error wraps *Error: a 4xx answer but 408 and 429
// is permanent, the rest is worth another try.
func (w Webhook) Send(ctx context.Context, p Post) error {
	var payload any = p
	if w.Format == FormatSlack {
		payload = struct {
			Text string `json:"text"`
		}{p.Subject + "\n\n" + p.Body}
	}
	data, err := json.Marshal(payload)
	if err != nil {
		return &Error{Err: fmt.Errorf("encode webhook post: %w", err), Permanent: true}
	}
	timeout := w.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, w.URL, bytes.NewReader(data))
	if err != nil {
		return &Error{Err: fmt.Errorf("webhook request: %w", err), Permanent: true}
	}
	req.Header.Set("Content-Type", "application/json")
	c := w.Client
	if c == nil {
		c = &http.Client{Timeout: timeout}
	}
	resp, err := c.Do(req)
	if err != nil {
		// A webhook's URL is its secret (Slack's carry the token): the
		// error says what failed without it.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return &Error{Err: fmt.Errorf("post to webhook: %w", err)}
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	perm := resp.StatusCode >= 400 && resp.StatusCode < 500 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests
	return &Error{Err: fmt.Errorf("webhook answered %s: %.200q", resp.Status, answer), Permanent: perm}
}
