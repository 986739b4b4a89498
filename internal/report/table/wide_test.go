package table

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/mattn/go-runewidth"
)

// East Asian wide characters take two terminal columns: the columns after
// a Japanese name start where they start after a Latin one, and a cut
// name still fits its column.
func TestWideNamesAlign(t *testing.T) {
	tb := &Table{
		Columns: []Column{
			{Key: "user", Title: "USER", Kind: Text},
			{Key: "team", Title: "TEAM", Kind: Text},
			{Key: "jobs", Title: "JOBS", Kind: Int},
		},
		Rows: []Row{
			{Cells: []any{"山田太郎", "画像認識", int64(12)}},
			{Cells: []any{"tanaka", "nlp", int64(3)}},
			{Cells: []any{"佐藤", "音声チーム研究室", int64(1234)}},
		},
	}
	cond := &runewidth.Condition{StrictEmojiNeutral: true}
	for _, tc := range []struct {
		name  string
		width int
	}{
		{"unlimited", 0},
		{"cut", 24},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := render(t, tb, Options{Format: Aligned, Width: tc.width})
			lines := strings.Split(strings.TrimRight(string(out), "\n"), "\n")
			if len(lines) != 4 {
				t.Fatalf("want a header and 3 rows, got %q", out)
			}
			// The last column is right-aligned, so every line ends in the
			// same terminal column, and the team column starts in the
			// same one as its title.
			want := cond.StringWidth(lines[0])
			teamAt := cond.StringWidth(lines[0][:strings.Index(lines[0], "TEAM")])
			var widths, starts []int
			for _, l := range lines {
				widths = append(widths, cond.StringWidth(l))
				starts = append(starts, teamStart(cond, l))
			}
			if diff := cmp.Diff([]int{want, want, want, want}, widths); diff != "" {
				t.Errorf("line widths differ (-want +got):\n%s\n%s", diff, out)
			}
			if diff := cmp.Diff([]int{teamAt, teamAt, teamAt, teamAt}, starts); diff != "" {
				t.Errorf("team column starts differ (-want +got):\n%s\n%s", diff, out)
			}
			if tc.width > 0 && want > tc.width {
				t.Errorf("lines of %d columns exceed %d:\n%s", want, tc.width, out)
			}
		})
	}
}

// teamStart is the terminal column where the second field of l starts
// (fields are separated by at least two spaces).
func teamStart(cond *runewidth.Condition, l string) int {
	i := strings.Index(l, "  ")
	for i < len(l) && l[i] == ' ' {
		i++
	}
	return cond.StringWidth(l[:i])
}
