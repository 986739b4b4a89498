package requests

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/store"
)

// applyWeb is a writer's pass whose system knows alice (uid 2001) and
// bob (2002), and no other web user.
func (e *queueEnv) applyWeb(t *testing.T) {
	t.Helper()
	uids := map[string]int{"alice": 2001, "bob": 2002}
	_, err := Apply(context.Background(), e.st, Options{Dir: e.dir, Now: e.now, Cluster: "c",
		Trusted:  func(uid int) bool { return uid == 0 || uid == 999 },
		UserName: func(uid int) (string, error) { return "user" + strconv.Itoa(uid), nil },
		UserID: func(name string) (int, error) {
			if uid, ok := uids[name]; ok {
				return uid, nil
			}
			return -1, errors.New("no such user")
		}})
	if err != nil {
		t.Fatal(err)
	}
}

func webAdd(web, node string, gpu *int, until time.Time, text string) *Request {
	r := add(node, gpu, until, text)
	r.Web = web
	return r
}

// A note serve files for a web user is that user's: its author is the
// web user, its uid theirs when the system knows them; only they or an
// admin may remove or edit it, and only serve may file for a web user.
func TestApplyWebNoteRequests(t *testing.T) {
	e := newQueueEnv(t)
	until := e.now.Add(4 * time.Hour)
	one := 1
	a := e.submit(t, webAdd("alice", "gpu01", &one, until, "NeurIPS run"), 999)
	carol := e.submit(t, webAdd("carol", "gpu02", nil, until, "carol's"), 999)
	forged := e.submit(t, webAdd("alice", "gpu02", nil, until, "not alice"), 1000)
	e.applyWeb(t)
	ra, rc := e.outcome(t, a, 999), e.outcome(t, carol, 999)
	if ra.Error != "" || rc.Error != "" {
		t.Fatalf("adds refused: %q / %q", ra.Error, rc.Error)
	}
	if got := e.outcome(t, forged, 1000).Error; !strings.HasPrefix(got, `refused: names web user "alice", but only root or the service user`) {
		t.Errorf("a user's file naming a web user: outcome %q", got)
	}
	got, err := e.st.Notes(context.Background(), e.now, false)
	if err != nil {
		t.Fatal(err)
	}
	want := []store.Note{
		{ID: ra.Note.ID, Cluster: "c", Node: "gpu01", GPU: &one, Until: until, Text: "NeurIPS run", Author: "alice", UID: 2001, Created: e.now},
		{ID: rc.Note.ID, Cluster: "c", Node: "gpu02", Until: until, Text: "carol's", Author: "carol", UID: -1, Created: e.now},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}

	edit := func(web string, id int64, text string) *Request {
		r := webAdd(web, "gpu01", &one, until, text)
		r.Note.Replaces = id
		return r
	}
	remove := func(web string, admin bool, id int64) *Request {
		r := rm(id)
		r.Web, r.WebAdmin = web, admin
		return r
	}
	for _, tc := range []struct {
		name string
		r    func() *Request
		err  string
		// texts are the notes in force after the request.
		texts []string
	}{
		{"bob removes alice's", func() *Request { return remove("bob", false, ra.Note.ID) },
			"refused: booked by alice; only alice or an admin can remove it", []string{"NeurIPS run", "carol's"}},
		{"bob edits alice's", func() *Request { return edit("bob", ra.Note.ID, "mine now") },
			"refused: booked by alice; only alice or an admin can remove it", []string{"NeurIPS run", "carol's"}},
		{"alice edits hers", func() *Request { return edit("alice", ra.Note.ID, "NeurIPS, until Friday") },
			"", []string{"NeurIPS, until Friday", "carol's"}},
		{"an admin removes carol's", func() *Request { return remove("boss", true, rc.Note.ID) },
			"", []string{"NeurIPS, until Friday"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := e.submit(t, tc.r(), 999)
			e.applyWeb(t)
			if out := e.outcome(t, id, 999).Error; out != tc.err {
				t.Errorf("outcome error %q, want %q", out, tc.err)
			}
			ns, err := e.st.Notes(context.Background(), e.now, false)
			if err != nil {
				t.Fatal(err)
			}
			var texts []string
			for _, n := range ns {
				texts = append(texts, n.Text)
			}
			if diff := cmp.Diff(tc.texts, texts); diff != "" {
				t.Errorf("notes in force (-want +got):\n%s", diff)
			}
		})
	}
}

// A web user's notes count against their per-user bound as the
// command's do.
func TestApplyWebNoteBound(t *testing.T) {
	e := newQueueEnv(t)
	until := e.now.Add(time.Hour)
	var last string
	for i := range MaxActivePerUser + 1 {
		last = e.submit(t, webAdd("alice", "gpu01", nil, until, "n"+strconv.Itoa(i)), 999)
		e.now = e.now.Add(time.Millisecond) // keeps the requests in order
	}
	e.applyWeb(t)
	if got := e.outcome(t, last, 999).Error; !strings.HasPrefix(got, "refused: alice has 20 notes in force") {
		t.Errorf("the 21st note: outcome %q", got)
	}
}
