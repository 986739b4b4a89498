package report

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/report/teams"
)

// gpuacct job in Japanese: the lines and headings from the catalogue,
// the GPU table's columns where the English ones are, by display width.
func TestJobTextJapanese(t *testing.T) {
	cat, err := i18n.New()
	if err != nil {
		t.Fatal(err)
	}
	ja := cat.Printer(i18n.Japanese)
	for _, tc := range []struct {
		name string
		det  *Detail
	}{
		{"busy-until-failed", jobDetail("failed", 1, []string{"g1"},
			jobGPU("g1", 0, 3600, 2400, 90, 1200, 3600, nil), jobGPU("g1", 1, 3600, 2400, 85, 1200, 3600, nil))},
		{"one-gpu", jobDetail("completed", 0, []string{"g1"}, jobGPU("g1", 0, 3600, 3000, 90, 600, 3600, nil))},
		{"ignored", ignored(jobDetail("completed", 0, []string{"g1"}, jobGPU("g1", 0, 3600, 0, 80, 3600, 3600, nil)), "benchmark")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var b, en, plain bytes.Buffer
			if err := WriteJobTextIn(&b, tc.det, &teams.Mapping{}, time.UTC, 100, ja); err != nil {
				t.Fatal(err)
			}
			got := b.String()
			goldenFile(t, filepath.Join("testdata", "job", "ja-"+tc.name+".txt"), got)
			for _, s := range []string{"ジョブ 42 (c1)", "開始 2026年3月2日 10:00:00", "ノード", "所見:"} {
				if !strings.Contains(got, s) {
					t.Errorf("no %q in\n%s", s, got)
				}
			}
			// The sparkline starts at one column on the heading and
			// on each GPU's line.
			lines := strings.Split(got, "\n")
			for i, l := range lines {
				if !strings.Contains(l, "ジョブ期間の使用率") {
					continue
				}
				head := i18n.Width(l[:strings.LastIndex(l, "  ")])
				row := lines[i+1]
				if w := i18n.Width(row[:strings.LastIndex(row, "  ")]); w != head {
					t.Errorf("the heading's last column starts at %d, the GPU's at %d:\n%s\n%s", head, w, l, row)
				}
			}
			// English through the printer is WriteJobText's, byte for byte.
			if err := WriteJobTextIn(&en, tc.det, &teams.Mapping{}, time.UTC, 100, cat.English()); err != nil {
				t.Fatal(err)
			}
			if err := WriteJobText(&plain, tc.det, &teams.Mapping{}, time.UTC, 100); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(plain.String(), en.String()); d != "" {
				t.Errorf("English differs (-WriteJobText +English printer):\n%s", d)
			}
		})
	}
}
