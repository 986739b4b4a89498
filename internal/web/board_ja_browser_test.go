package web_test

import (
	"encoding/json"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/aicloud/gpusuite/internal/testkit/browser"
	"github.com/aicloud/gpusuite/internal/web"
)

// boardWords are the ASCII words a Japanese board may still show: names
// of products and formats, a key's name (Tab), and units. Everything else in ASCII must be
// the cluster's own data (dataWords).
var boardWords = map[string]bool{"gpuacct": true, "Slurm": true, "NVIDIA": true, "JSON": true, "API": true, "MIG": true,
	"GPU": true, "CPU": true, "UUID": true, "JavaScript": true, "GiB": true, "MiB": true, "kWh": true, "UTC": true, "pid": true,
	"Tab": true}

// dataWords are the words of every string /api/v1/board holds: node,
// user, team, partition and model names, Slurm's states, reasons and
// reservations, notes, UUIDs and command names. They come from the
// cluster, not the catalogue, and stay as they are.
func dataWords(t *testing.T, url string) map[string]bool {
	t.Helper()
	_, b := getJSON(t, url, nil)
	var doc any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("board document: %v", err)
	}
	words := map[string]bool{}
	var walk func(v any)
	walk = func(v any) {
		switch x := v.(type) {
		case string:
			for _, w := range asciiWord.FindAllString(x, -1) {
				words[w] = true
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		case map[string]any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(doc)
	return words
}

var asciiWord = regexp.MustCompile(`[A-Za-z]{3,}`)

// The board in Japanese (Chromium with --lang=ja): the page, its
// tooltips and what the event stream sends are in Japanese; no ASCII
// word of three letters or more is left but data and boardWords.
func TestBoardBrowserJapanese(t *testing.T) {
	lb := newLiveBoard(t, bookedNote())
	srv := newBoardServer(t, web.Options{Board: lb.src, BoardTick: 100 * time.Millisecond})
	ctx := browser.NewBrowserLang(t, 1440, 1000, "ja")
	browser.Do(t, ctx, "board", chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#gpu-n1-0"))
	if !browser.Eval(t, ctx, `document.documentElement.lang === "ja"`) {
		t.Fatalf("the page is not in Japanese: lang %q", browser.Text(t, ctx, "html"))
	}
	// the stream's board replaces the page's: it must be Japanese too
	browser.Wait(t, ctx, "stream open", 2*time.Minute, `document.getElementById("board").hasAttribute("data-updated")`)
	browser.Wait(t, ctx, "ages ticked", 2*time.Minute, `document.querySelector("#agents-age [data-t]").textContent.indexOf("秒") > 0`)
	text := browser.Value[string](t, ctx, `(function () {
		var c = document.body.cloneNode(true);
		c.querySelectorAll("noscript").forEach(function (e) { e.remove(); });
		return c.textContent + " " + document.title + " " + document.getElementById("board-q").placeholder;
	})()`)
	for _, s := range []string{"凡例", "いま空いているGPU", "実行中のジョブ", "空き", "稼働", "ジョブ", "検索", "2026年11月26日"} {
		if !strings.Contains(text, s) {
			t.Errorf("no %q on the Japanese board", s)
		}
	}
	data := dataWords(t, srv.URL+"/api/v1/board")
	left := map[string]bool{}
	for _, w := range asciiWord.FindAllString(text, -1) {
		if !boardWords[w] && !data[w] {
			left[w] = true
		}
	}
	if len(left) > 0 {
		var ws []string
		for w := range left {
			ws = append(ws, w)
		}
		sort.Strings(ws)
		t.Errorf("English left on the Japanese board: %s", strings.Join(ws, ", "))
		for _, w := range ws {
			i := strings.Index(text, w)
			t.Logf("%q", text[max(0, i-60):min(len(text), i+60)])
		}
	}
}
