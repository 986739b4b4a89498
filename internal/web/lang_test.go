package web_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// getLang fetches path as a browser asking for languages accept.
func getLang(t *testing.T, f *fixture, path, accept string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.url(path), nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept-Language", accept)
	}
	resp, err := (&http.Client{Timeout: 60 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// The accounting pages speak Japanese to a browser that prefers it
// (q-values honoured) and English to every other.
func TestPagesInJapanese(t *testing.T) {
	f := newFixture(t, time.Now())
	f.serve(t)
	_, en := getLang(t, f, "/accounting", "")
	team := regexp.MustCompile(`href="(/team/[^"?/]+)`).FindStringSubmatch(en)
	user := regexp.MustCompile(`href="(/user/[^"?/]+)`).FindStringSubmatch(en)
	if team == nil || user == nil {
		t.Fatalf("no team or user link on /accounting:\n%s", en)
	}
	for _, tc := range []struct {
		name, path, accept string
		code               int
		lang               string
		has, hasNot        []string
	}{
		{"overview ja", "/accounting", "ja,en;q=0.8", 200, "ja",
			[]string{"利用の多いユーザー", "実行中", "ボード", "合計", "チーム"}, []string{"Top users", "Running now", ">Board<", ">Total<"}},
		{"overview en", "/accounting", "en-US,en;q=0.9,ja;q=0.5", 200, "en",
			[]string{"Top users", "Running now", ">Board<"}, []string{"利用の多いユーザー"}},
		{"overview no header", "/accounting", "", 200, "en", []string{"Top users"}, []string{"ボード"}},
		{"overview unspoken", "/accounting", "fr-FR,fr;q=0.9", 200, "en", []string{"Top users"}, []string{"ボード"}},
		{"team ja", team[1], "ja-JP", 200, "ja", []string{"ユーザー", "この期間のジョブ", "並び順:", "新しい順"}, []string{"Jobs in this window", ">Users<", "Order:"}},
		{"user ja", user[1], "ja", 200, "ja", []string{"課金先のチーム", "開始したジョブ"}, []string{"Teams charged", "Jobs started"}},
		{"not found ja", "/no-such-page", "ja", 404, "ja", []string{"見つかりません", "ライブボード"}, []string{"Not found", "The live board"}},
		{"not found en", "/no-such-page", "en", 404, "en", []string{"Not found", "The live board"}, []string{"見つかりません"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, page := getLang(t, f, tc.path, tc.accept)
			if code != tc.code {
				t.Fatalf("GET %s: %d, want %d\n%s", tc.path, code, tc.code, page)
			}
			if want := `<html lang="` + tc.lang + `">`; !strings.Contains(page, want) {
				t.Errorf("GET %s (Accept-Language %q): no %s", tc.path, tc.accept, want)
			}
			for _, s := range tc.has {
				if !strings.Contains(page, s) {
					t.Errorf("GET %s (Accept-Language %q): no %q", tc.path, tc.accept, s)
				}
			}
			for _, s := range tc.hasNot {
				if strings.Contains(page, s) {
					t.Errorf("GET %s (Accept-Language %q): still %q", tc.path, tc.accept, s)
				}
			}
		})
	}
}
