package web_test

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/web"
)

// The booking page, its statuses and its refusals speak Japanese to a
// browser that asks for it: no English left of what a user reads.
func TestBookInJapanese(t *testing.T) {
	e := newFormsEnv(t, web.Options{})
	e.lang = "ja"
	page := "/book?node=n1&gpu=1"
	has := func(t *testing.T, what, body string, want, not []string) {
		t.Helper()
		for _, s := range want {
			if !strings.Contains(body, s) {
				t.Errorf("%s: no %q in %.3000s", what, s, body)
			}
		}
		for _, s := range not {
			if strings.Contains(body, s) {
				t.Errorf("%s: still %q", what, s)
			}
		}
	}
	_, _, body := e.do(t, http.MethodGet, page, "alice", nil, "")
	has(t, "the empty page", body, []string{`<html lang="ja">`, "n1 の GPU 1", "誰もブックしていません。", "ブックする", "期限", "用途", "alice としてブックします"},
		[]string{"Nobody has booked it", "Book it", ">Until<", "What for", "Booked as", "node n1"})

	alice := e.token(t, page, "alice")
	code, loc, body := e.post(t, "/book/add", "alice", url.Values{"token": {alice}, "node": {"n1"}, "gpu": {"1"}, "until": {"4h"}, "text": {"NeurIPS"}})
	if code != http.StatusSeeOther {
		t.Fatalf("alice books: %d %.300s", code, body)
	}
	_, _, body = e.do(t, http.MethodGet, loc, "alice", nil, "")
	has(t, "sent", body, []string{"送信しました。"}, []string{"Sent:"})
	e.apply(t)
	_, _, body = e.do(t, http.MethodGet, loc, "alice", nil, "")
	has(t, "kept", body, []string{"を登録しました。", "ブック番号", "解放", "編集", "保存"}, []string{"Done:", ">Booking<", ">Free<", ">Edit<", ">Save<"})
	ns := e.notesInForce(t)
	if len(ns) != 1 {
		t.Fatalf("notes in force after alice's booking: %+v", ns)
	}
	id := strconv.FormatInt(ns[0].ID, 10)

	bob := e.token(t, page, "bob")
	e.refuses(t, "/book/rm", []refused{
		{"bob frees alice's", http.MethodPost, "bob", "self", url.Values{"token": {bob}, "node": {"n1"}, "gpu": {"1"}, "id": {id}}, 403, "alice がブックしています。解放できるのは alice と管理者だけです"},
		{"no such booking", http.MethodPost, "bob", "self", url.Values{"token": {bob}, "node": {"n1"}, "gpu": {"1"}, "id": {"999"}}, 404, "有効なブック 999 はありません"},
		{"no token", http.MethodPost, "alice", "self", url.Values{"node": {"n1"}, "id": {id}}, 403, "フォームのトークンがないか"},
		{"another origin", http.MethodPost, "alice", "http://evil.example", url.Values{"token": {alice}, "node": {"n1"}, "id": {id}}, 403, "フォームの送信元が http://evil.example で"},
		{"no origin", http.MethodPost, "alice", "", url.Values{"token": {alice}, "node": {"n1"}, "id": {id}}, 403, "Origin も Referer もありません"},
		{"GET of the action", http.MethodGet, "alice", "", nil, 405, "GET は使えません"},
	})
}
