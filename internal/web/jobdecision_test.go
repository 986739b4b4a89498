package web_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/web"
)

// TestJobPageDecision: the job page says who last ignored the run or
// counted it again, and when: boss ignores job 7 from its page, then
// carol counts it again with gpuacct unignore an hour and a half later,
// each applied by the writer; before either the page has no such line.
// The reason shows without the "(by boss, …)" the line says already; a
// Japanese reader gets the line in Japanese.
func TestJobPageDecision(t *testing.T) {
	e := newFormsEnv(t, web.Options{})
	decided := regexp.MustCompile(`<dt>([^<]*)</dt><dd id="decided">([^<]*)</dd>`)
	ignored := regexp.MustCompile(`<dt>Ignored</dt><dd>([^<]*)</dd>`)
	page := func(t *testing.T) (decision []string, reason string) {
		t.Helper()
		code, _, body := e.do(t, http.MethodGet, "/job/c1/7", "boss", nil, "")
		if code != http.StatusOK {
			t.Fatalf("GET /job/c1/7: %d %.300s", code, body)
		}
		if m := decided.FindStringSubmatch(body); m != nil {
			decision = m[1:]
		}
		if m := ignored.FindStringSubmatch(body); m != nil {
			reason = m[1]
		}
		return decision, reason
	}

	for _, tc := range []struct {
		name     string
		decide   func(t *testing.T)
		decision []string // the label and the line; nil: none shown
		reason   string   // the Ignored field's; "": none shown
	}{
		{name: "no decision"},
		{"ignored from the page", func(t *testing.T) {
			token := e.token(t, "/book?node=n1", "boss")
			if code, _, body := e.post(t, "/job/c1/7/ignore", "boss", url.Values{"token": {token}, "action": {"ignore"}, "reason": {"benchmark of the new nodes"}}); code != http.StatusSeeOther {
				t.Fatalf("boss ignores job 7: %d %q", code, refusal(body))
			}
		}, []string{"Last decision", "ignored by boss at 2026-11-26 06:00"}, "benchmark of the new nodes"},
		{"counted again with gpuacct unignore", func(t *testing.T) {
			e.now = e.now.Add(90 * time.Minute)
			r := &requests.Request{Action: requests.Unignore, Jobs: []string{"7"}, Cluster: "c1", By: "carol", UID: os.Geteuid(), Time: e.now}
			if _, err := requests.Submit(e.dir, r); err != nil {
				t.Fatal(err)
			}
		}, []string{"Last decision", "counted again by carol at 2026-11-26 07:30"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.decide != nil {
				tc.decide(t)
				e.apply(t)
			}
			decision, reason := page(t)
			if diff := cmp.Diff(tc.decision, decision); diff != "" {
				t.Errorf("decision shown (-want +got):\n%s", diff)
			}
			if reason != tc.reason {
				t.Errorf("Ignored field %q, want %q", reason, tc.reason)
			}
		})
	}

	e.lang = "ja"
	if decision, _ := page(t); !cmp.Equal(decision, []string{"最後の判断", "carol が 2026-11-26 07:30 に再び集計に含めました"}) {
		t.Errorf("decision shown in Japanese: %q", decision)
	}
}

// TestJobAPIDecisionPrivate: under web.private_data the job's JSON names
// who ignored the run only to those who may see that user: alice, whose
// run boss (an admin) ignored, reads ignore_by hidden and the reason
// without the "(by boss, …)" the ledger's writer ends it with; boss reads
// both as the ledger keeps them.
func TestJobAPIDecisionPrivate(t *testing.T) {
	e := newFormsEnv(t, web.Options{PrivateData: true})
	token := e.token(t, "/book?node=n1", "boss")
	if code, _, body := e.post(t, "/job/c1/7/ignore", "boss", url.Values{"token": {token}, "action": {"ignore"}, "reason": {"benchmark"}}); code != http.StatusSeeOther {
		t.Fatalf("boss ignores job 7: %d %q", code, refusal(body))
	}
	e.apply(t)
	for _, tc := range []struct {
		viewer, by string
		reason     *regexp.Regexp
	}{
		{"alice", "(hidden)", regexp.MustCompile(`^benchmark$`)},
		{"boss", "boss", regexp.MustCompile(`^benchmark \(by boss, 2026-11-26 06:00Z\)$`)},
	} {
		t.Run(tc.viewer, func(t *testing.T) {
			code, _, body := e.do(t, http.MethodGet, "/api/v1/jobs/c1/7", tc.viewer, nil, "")
			if code != http.StatusOK {
				t.Fatalf("GET /api/v1/jobs/c1/7: %d %.300s", code, body)
			}
			var got struct {
				IgnoreBy     string `json:"ignore_by"`
				IgnoreReason string `json:"ignore_reason"`
			}
			if err := json.Unmarshal([]byte(body), &got); err != nil {
				t.Fatalf("decode %.300s: %v", body, err)
			}
			if got.IgnoreBy != tc.by {
				t.Errorf("ignore_by %q, want %q", got.IgnoreBy, tc.by)
			}
			if !tc.reason.MatchString(got.IgnoreReason) {
				t.Errorf("ignore_reason %q, want %v", got.IgnoreReason, tc.reason)
			}
		})
	}
}
