package web_test

import (
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/report/reportfixture"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
)

var (
	mainRE = regexp.MustCompile(`(?s)<main>.*?</main>`)
	svgRE  = regexp.MustCompile(`(?s)<svg.*?</svg>`)
	tagRE  = regexp.MustCompile(`<[^>]*>`)
	wsRE   = regexp.MustCompile(`[ \t]+`)
)

// pageText is the text of a page's <main> (the chart left out), a line
// per source line, for goldens a reader can check by eye.
func pageText(page string) string {
	m := svgRE.ReplaceAllString(mainRE.FindString(page), "[chart]")
	m = tagRE.ReplaceAllString(m, " ")
	var out []string
	for _, l := range strings.Split(m, "\n") {
		if l = strings.TrimSpace(wsRE.ReplaceAllString(l, " ")); l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n") + "\n"
}

// TestClusterPages: the overview, team and user pages show the figures,
// running jobs, nodes and jobs of the clusters chosen only; over both
// clusters each table keeps a cluster column and each share is of its own
// cluster, as gpuacct report --all-clusters prints them. The clusters'
// figures differ, so a page that ignores the choice fails its golden
// (testdata/clusters/page-*.txt, -update) and the checks below.
func TestClusterPages(t *testing.T) {
	srv := clusterServer(t, twoClusterLedger(t), "")
	tests := []struct {
		name, path string
		has, lacks []string
	}{
		{"overview-gpu1", "/accounting?clusters=gpu1&" + clusterWindow,
			[]string{"Running now 1", "\n11 bob\n", "2 nodes with 3 GPUs", "Total 26.5"}, []string{"dave", "carol", "Cluster", "n3"}},
		{"overview-gpu2", "/accounting?clusters=gpu2&" + clusterWindow,
			[]string{"Running now 1", "\n10 dave\n", "2 nodes with 5 GPUs", "Total 50.0"}, []string{"bob", "Cluster", "n2"}},
		{"overview-all", "/accounting?" + clusterWindow,
			[]string{"Running now 2", "gpu1 11 bob", "gpu2 10 dave", "4 nodes with 8 GPUs", "Cluster Team", "Total 76.5"}, nil},
		{"team-gpu1", "/team/nlp?clusters=gpu1&" + clusterWindow,
			[]string{"Share of cluster 92.5 %", "\nbob\n", "\n11\n"}, []string{"carol", "dave", "Cluster"}},
		{"team-all", "/team/nlp?clusters=all&" + clusterWindow,
			[]string{"Share of the clusters shown", "gpu1 bob", "gpu2 carol", "gpu2 10\ndave"}, nil},
		{"user-gpu2", "/user/alice?clusters=gpu2&" + clusterWindow,
			[]string{"Allocated 2.00", "\n7\nvision\ngpu n1 1 "}, []string{"Cluster", "gpu1"}},
		{"user-all", "/user/alice?" + clusterWindow,
			[]string{"gpu1 7\nvision", "gpu2 7\nvision", "gpu1 vision\n7.5 %", "gpu2 vision\n4.0 %"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, b := getJSON(t, srv.URL+tt.path, nil)
			if code != 200 {
				t.Fatalf("GET %s: %d: %.800s", tt.path, code, b)
			}
			got := pageText(string(b))
			for _, s := range tt.has {
				if !strings.Contains(got, s) {
					t.Errorf("the page lacks %q", s)
				}
			}
			for _, s := range tt.lacks {
				if strings.Contains(got, s) {
					t.Errorf("the page holds %q", s)
				}
			}
			golden(t, filepath.Join("clusters", "page-"+tt.name+".txt"), []byte(got))
		})
	}
}

// TestClusterNotes: /api/v1/notes takes ?clusters= like the other ledger
// reads: a note on gpu1's n1 and one on gpu2's n1 are told apart.
func TestClusterNotes(t *testing.T) {
	two := twoClusterLedger(t)
	until, created := clusterNow.Unix()+3600, clusterNow.Unix()-60
	ledgerdb.Exec(t, two, `INSERT INTO notes(cluster, node, until, text, author, uid, created) VALUES
	 ('gpu1', 'n1', ?, 'gpu1 fan broken', 'alice', 1000, ?), ('gpu2', 'n1', ?, 'gpu2 booked', 'bob', 1001, ?)`, until, created, until, created)
	noLocal, local2 := clusterServer(t, two, ""), clusterServer(t, two, "gpu2")
	tests := []struct {
		name string
		srv  *httptest.Server
		path string
		code int
		want []string // the notes' texts
	}{
		{"chosen", noLocal, "/api/v1/notes?clusters=gpu1", 200, []string{"gpu1 fan broken"}},
		{"local", local2, "/api/v1/notes", 200, []string{"gpu2 booked"}},
		{"all", local2, "/api/v1/notes?clusters=all&all=1", 200, []string{"gpu2 booked", "gpu1 fan broken"}},
		{"no local: all", noLocal, "/api/v1/notes", 200, []string{"gpu1 fan broken", "gpu2 booked"}},
		{"unknown", noLocal, "/api/v1/notes?clusters=gpu3", 400, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var doc struct {
				Notes []struct{ Cluster, Text string }
			}
			code, b := getJSON(t, tt.srv.URL+tt.path, &doc)
			if code != tt.code {
				t.Fatalf("GET %s: %d, want %d: %s", tt.path, code, tt.code, b)
			}
			var got []string
			for _, n := range doc.Notes {
				got = append(got, n.Text)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("notes (-want +got):\n%s", d)
			}
		})
	}
}

// TestClusterRunningMore: when the overview shows only the newest 50
// running jobs, its link to all of them keeps the cluster chosen, and
// the count is of that cluster's jobs alone.
func TestClusterRunningMore(t *testing.T) {
	t0 := reportfixture.T0
	jobs := []reportfixture.Job{{Cluster: "gpu2", ID: 1, User: "dave", Acct: "nlp", Part: "big", Node: "n3", GPUs: 1, Start: t0 + 7200}}
	for i := range 51 {
		jobs = append(jobs, reportfixture.Job{Cluster: "gpu1", ID: uint64(100 + i), User: "bob", Acct: "nlp", Part: "gpu", Node: "n2", GPUs: 1, Start: t0 + int64(i)})
	}
	srv := clusterServer(t, reportfixture.BuildLedger(t, jobs, clusterNow), "")
	code, b := getJSON(t, srv.URL+"/accounting?clusters=gpu1&"+clusterWindow, nil)
	if code != 200 {
		t.Fatalf("GET: %d: %.800s", code, b)
	}
	page := string(b)
	for _, want := range []string{`Running now <span class="count">51</span>`, `<a href="/api/v1/jobs/running?clusters=gpu1">`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %s", want)
		}
	}
}
