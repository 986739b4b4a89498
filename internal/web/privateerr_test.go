package web_test

import (
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strings"
	"testing"
)

// testErrorBodies asks every route, as login (a user with no jobs in
// the ledger, whose name is a prefix of a user's who has some), with
// the bad values a user types: no answer that is not a 2xx may name any
// of others or a path of the server, and the user's own filter reads as
// no data rather than an error that suggests the names nearest theirs.
func testErrorBodies(t *testing.T, f *fixture, login [2]string, others []string, win url.Values) {
	me := login[0]
	w := "&" + win.Encode()
	job := fmt.Sprintf("%s/%d", cluster, f.running.id)
	paths := []string{
		"/api/v1/jobs?user=" + me + w, "/api/v1/jobs?users=" + me + w,
		"/api/v1/report/users?users=" + me + w, "/api/v1/report/jobs?users=" + me + w,
		"/user/" + me + "?" + win.Encode(), "/accounting?users=" + me + w,
		"/api/v1/jobs?account=physic" + w, "/api/v1/jobs?partition=nosuch" + w, "/api/v1/jobs?model=nosuch" + w,
		"/api/v1/jobs?nodes=nosuch" + w, "/api/v1/jobs?cluster=nosuch" + w, "/api/v1/jobs?start=garbage",
		"/api/v1/jobs?end=1999-01-01", "/api/v1/jobs?limit=-1", "/api/v1/jobs?sort=nosuch",
		"/api/v1/report/nosuch", "/api/v1/report/users?accounts=physic" + w, "/api/v1/report/nodes?nodes=nosuch" + w,
		"/api/v1/report/users?tz=Mars/Olympus", "/api/v1/report/users?start=2020-13-45",
		"/api/v1/jobs/" + job, "/api/v1/jobs/" + job + "/series",
		"/api/v1/jobs/nosuch/1", "/api/v1/jobs/" + cluster + "/abc", "/api/v1/jobs/" + cluster + "/0",
		"/api/v1/jobs/" + cluster + "/999999999", "/api/v1/jobs/" + cluster + "/999999999/series",
		"/api/v1/jobs/running?user=" + me, "/api/v1/nodes?nodes=nosuch", "/api/v1/free?partition=nosuch",
		"/api/v1/board?node=nosuch", "/api/v1/notes?node=nosuch", "/api/v1/health?x=%ff",
		"/api/v1/nosuch", "/team/nosuch", "/team/physics?start=garbage", "/job/" + job, "/job/nosuch/1",
		"/job/" + cluster + "/abc", "/job/" + cluster + "/999999999", "/nosuch/page",
	}
	leaks := append([]string{f.root, f.db, os.TempDir() + "/", "/data/gpusuite", "/var/", "postgres://"}, others...)
	refused := 0
	for _, path := range paths {
		code, body := f.get(t, path, login, nil)
		if code == 0 {
			t.Errorf("%s: no answer", path)
			continue
		}
		if code/100 == 2 {
			continue
		}
		refused++
		for _, leak := range leaks {
			if strings.Contains(string(body), leak) {
				t.Errorf("%s (%d) as %s names %q: %.400s", path, code, me, leak, body)
			}
		}
	}
	// Most of the paths are refusals: a scan that saw none would pass
	// whatever the bodies said.
	if refused < len(paths)/2 {
		t.Errorf("%d of %d paths answered an error, want at least half: the scan saw too few bodies", refused, len(paths))
	}
	for _, path := range []string{"/api/v1/jobs?user=" + me + w, "/api/v1/report/users?users=" + me + w} {
		var doc struct {
			Rows []any `json:"rows"`
			Jobs []any `json:"jobs"`
		}
		if code, b := f.get(t, path, login, &doc); code != http.StatusOK || len(doc.Rows)+len(doc.Jobs) != 0 {
			t.Errorf("%s as %s, who has no jobs: %d %.300s, want 200 and nothing", path, me, code, b)
		}
	}
}
