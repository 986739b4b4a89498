package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/web"
)

// TestIgnoreFromJobPage: on the test Slurm agentuser is made coordinator
// of team-a. On job 7's page (team-a) agentuser gets the ignore form,
// ignores it with a reason and undoes it, each applied by the writer and
// kept in the ledger with who and when; on job 8's (team-b) agentuser
// gets no form and a post, even with a valid token, is refused (403), as
// is bob's on job 7; an admin gets the form on both; a reason is
// required.
func TestIgnoreFromJobPage(t *testing.T) {
	roles := coordinatorRoles(t)
	e := newFormsEnv(t, web.Options{Roles: roles})

	for _, tc := range []struct {
		user, job string
		form      bool
	}{
		{"agentuser", "7", true}, {"agentuser", "8", false}, {"bob", "7", false}, {"alice", "7", false}, {"boss", "7", true}, {"boss", "8", true},
	} {
		t.Run(tc.user+" on "+tc.job, func(t *testing.T) {
			code, _, body := e.do(t, http.MethodGet, "/job/c1/"+tc.job, tc.user, nil, "")
			if has := strings.Contains(body, `id="ignore"`); code != http.StatusOK || has != tc.form {
				t.Errorf("GET /job/c1/%s as %s: %d, form %v, want %v", tc.job, tc.user, code, has, tc.form)
			}
		})
	}

	agent, bob := e.token(t, "/book?node=n1", "agentuser"), e.token(t, "/book?node=n1", "bob")
	for _, tc := range []struct {
		name, user, job string
		form            url.Values
		code            int
		why             string
	}{
		{"coordinator of another account", "agentuser", "8", url.Values{"token": {agent}, "action": {"ignore"}, "reason": {"x"}}, 403,
			"agentuser may not ignore job 8: only web.admins and the coordinators of account team-b in Slurm may"},
		{"a user of another account", "bob", "7", url.Values{"token": {bob}, "action": {"ignore"}, "reason": {"x"}}, 403,
			"bob may not ignore job 7"},
		{"no reason", "agentuser", "7", url.Values{"token": {agent}, "action": {"ignore"}, "reason": {" "}}, 400, "a reason is required"},
		{"no token", "agentuser", "7", url.Values{"action": {"ignore"}, "reason": {"x"}}, 403, "the form's token is missing or not yours"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.post(t, "/job/c1/"+tc.job+"/ignore", tc.user, tc.form)
			if why := refusal(body); code != tc.code || !strings.Contains(why, tc.why) {
				t.Errorf("%d %q, want %d saying %q", code, why, tc.code, tc.why)
			}
		})
	}
	if code, _, _ := e.do(t, http.MethodGet, "/job/c1/7/ignore", "agentuser", nil, ""); code != http.StatusMethodNotAllowed {
		t.Errorf("GET of the ignore action: %d, want 405", code)
	}
	if code, _, body := e.do(t, http.MethodPost, "/job/c1/7/ignore", "agentuser", url.Values{"token": {agent}, "action": {"ignore"}, "reason": {"x"}}, "http://evil.example"); code != http.StatusForbidden {
		t.Errorf("a post from another origin: %d %q, want 403", code, refusal(body))
	}

	type jobDoc struct {
		Ignored      bool    `json:"ignored"`
		IgnoreReason *string `json:"ignore_reason"`
	}
	job7 := func() jobDoc {
		t.Helper()
		var d jobDoc
		code, _, body := e.do(t, http.MethodGet, "/api/v1/jobs/c1/7", "boss", nil, "")
		if err := json.Unmarshal([]byte(body), &d); code != http.StatusOK || err != nil {
			t.Fatalf("job 7: %d %v %.300s", code, err, body)
		}
		return d
	}
	code, loc, body := e.post(t, "/job/c1/7/ignore", "agentuser", url.Values{"token": {agent}, "action": {"ignore"}, "reason": {"benchmark of the new nodes"}})
	if code != http.StatusSeeOther || !strings.HasPrefix(loc, "/job/c1/7?filed=") {
		t.Fatalf("agentuser ignores job 7: %d %q %q", code, loc, refusal(body))
	}
	if d := job7(); d.Ignored {
		t.Errorf("job 7 ignored before the writer's pass")
	}
	e.apply(t)
	if _, _, body := e.do(t, http.MethodGet, loc, "agentuser", nil, ""); !strings.Contains(body, `id="ignore-status" role="status">Done.`) || !strings.Contains(body, "count it again?") {
		t.Errorf("the job's page after the pass does not say done and offer the undo: %.3000s", body)
	}
	want := "benchmark of the new nodes (by agentuser, " + e.now.UTC().Format("2006-01-02 15:04Z") + ")"
	if d := job7(); !d.Ignored || d.IgnoreReason == nil || *d.IgnoreReason != want {
		t.Errorf("job 7 after the pass: %+v, want ignored with %q", d, want)
	}
	if code, _, body := e.post(t, "/job/c1/7/ignore", "agentuser", url.Values{"token": {agent}, "action": {"unignore"}}); code != http.StatusSeeOther {
		t.Fatalf("agentuser undoes: %d %q", code, refusal(body))
	}
	e.apply(t)
	if d := job7(); d.Ignored {
		t.Errorf("job 7 still ignored after the undo: %+v", d)
	}
	// The ledger keeps who undid it and when, though the reason is gone.
	if d, err := e.st.LastDecision(context.Background(), "c1", 7, 0); err != nil || d.Ignored || d.By != "agentuser" || !d.At.Equal(e.now) {
		t.Errorf("job 7's last decision in the ledger: %+v, %v; want counted again by agentuser at %s", d, err, e.now)
	}

	// A Japanese browser reads the refusals and the statuses in Japanese.
	e.lang = "ja"
	for _, tc := range []struct {
		name, job string
		reason    string
		code      int
		why       string
	}{
		{"ja: coordinator of another account", "8", "x", 403, "agentuser はジョブ 8 を除外できません。除外できるのは web.admins と、Slurm でアカウント team-b のコーディネーターだけです"},
		{"ja: no reason", "7", " ", 400, "理由が必要です"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := e.post(t, "/job/c1/"+tc.job+"/ignore", "agentuser", url.Values{"token": {agent}, "action": {"ignore"}, "reason": {tc.reason}})
			if why := refusal(body); code != tc.code || !strings.Contains(why, tc.why) {
				t.Errorf("%d %q, want %d saying %q", code, why, tc.code, tc.why)
			}
		})
	}
	code, loc, body = e.post(t, "/job/c1/7/ignore", "agentuser", url.Values{"token": {agent}, "action": {"ignore"}, "reason": {"新しいノードのベンチマーク"}})
	if code != http.StatusSeeOther {
		t.Fatalf("agentuser ignores job 7 in Japanese: %d %q", code, refusal(body))
	}
	if _, _, body := e.do(t, http.MethodGet, loc, "agentuser", nil, ""); !strings.Contains(body, `id="ignore-status" role="status">送信しました。`) {
		t.Errorf("the job's page before the pass does not say sent in Japanese: %.3000s", body)
	}
	e.apply(t)
	if _, _, body := e.do(t, http.MethodGet, loc, "agentuser", nil, ""); !strings.Contains(body, `id="ignore-status" role="status">完了しました。`) {
		t.Errorf("the job's page after the pass does not say done in Japanese: %.3000s", body)
	}
}
