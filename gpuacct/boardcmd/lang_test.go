package boardcmd

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

// gpuacct free and status in Japanese (LANG=ja_JP.UTF-8): the golden
// output, and every table's columns aligned by display width.
func TestFreeJapanese(t *testing.T) {
	one := 1
	noted := func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) {
		return []board.Note{
			{ID: 4, Node: "n1", GPU: &one, Until: now.Add(30 * time.Hour), Text: "NeurIPSの実験用に予約", Author: "carol"},
			{ID: 5, Node: "n2", Until: now.Add(2 * time.Hour), Text: "ファンがうるさい", Author: "root"},
		}, nil
	}
	slurm := func(context.Context, time.Duration) (slurmstate.State, error) { return slurmFixture(), nil }
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
	}{
		{"free_ja", map[string]string{"LANG": "ja_JP.UTF-8"}, []string{"free"}},
		{"free_ja_no_slurm", map[string]string{"LANG": "ja_JP.UTF-8"}, []string{"free", "--no-slurm"}},
		{"status_ja", map[string]string{"LC_MESSAGES": "ja_JP.UTF-8", "LANG": "C"}, []string{"status", "n1", "n2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := fixture(t)
			args := append([]string{tc.args[0], "--live-dir", dir}, tc.args[1:]...)
			code, out, errs := runApp(t, now, "[cluster]\nname = \"c1\"\n", func(k string) string { return tc.env[k] }, slurm, noted, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, errs)
			}
			cmdline.Golden(t, filepath.Join("testdata", tc.name+".golden"), out, *update)
			checkAligned(t, out)
		})
	}
}

// checkAligned checks that a table's rows, from its heading to the first
// blank line, are one display width, and that each column the heading
// starts starts there, or ends there, in every row (left- or
// right-aligned).
func checkAligned(t *testing.T, out string) {
	t.Helper()
	lines := strings.Split(out, "\n")
	head := -1
	for i, l := range lines {
		if strings.Contains(l, "モデル") || strings.Contains(l, "ノード") && strings.Contains(l, "状態") {
			head = i
			break
		}
	}
	if head < 0 {
		t.Fatalf("no Japanese heading in\n%s", out)
	}
	starts := cellStarts(lines[head])
	rows := 0
	for _, l := range lines[head+1:] {
		if strings.TrimSpace(l) == "" || len(cellStarts(l)) < len(starts)-1 {
			break
		}
		rows++
		for _, s := range starts {
			if !startsOrEndsAt(l, s.at, s.end) {
				t.Errorf("column %q (columns %d-%d) is not aligned in\n%s\n%s", s.text, s.at, s.end, lines[head], l)
			}
		}
	}
	if rows == 0 {
		t.Errorf("no row under the heading in\n%s", out)
	}
}

type cell struct {
	text    string
	at, end int // display columns
}

// cellStarts are the words of a heading line separated by two spaces or
// more, with the display columns they take.
func cellStarts(l string) []cell {
	var out []cell
	col := 0
	for _, f := range strings.SplitAfter(l, "  ") {
		w := strings.TrimSpace(f)
		lead := i18n.Width(f) - i18n.Width(strings.TrimLeft(f, " "))
		if w != "" {
			out = append(out, cell{text: w, at: col + lead, end: col + lead + i18n.Width(w)})
		}
		col += i18n.Width(f)
	}
	return out
}

// startsOrEndsAt reports whether l has a cell starting at display
// column at or ending at end.
func startsOrEndsAt(l string, at, end int) bool {
	col := 0
	prev := ' '
	for _, r := range l {
		w := i18n.Width(string(r))
		if r != ' ' && prev == ' ' && col == at {
			return true
		}
		if r == ' ' && prev != ' ' && col == end {
			return true
		}
		col += w
		prev = r
	}
	return col == end && prev != ' '
}

// An old --slurm-file is warned of in Japanese above free, while the
// JSON document's problems keep the line in English.
func TestSlurmOldJapanese(t *testing.T) {
	dir, slurm, notes := demoLike(t)
	old := filepath.Join(t.TempDir(), "old.json")
	slurm.At = now.Add(-10 * time.Minute)
	if err := slurmstate.WriteFile(old, slurm); err != nil {
		t.Fatal(err)
	}
	asked := func(context.Context, time.Duration) (slurmstate.State, error) {
		return slurmstate.State{}, errors.New("Slurm asked")
	}
	noted := func(context.Context, string, time.Duration, time.Time) ([]board.Note, error) { return notes, nil }
	ja := func(k string) string { return map[string]string{"LANG": "ja_JP.UTF-8"}[k] }
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"free", "--live-dir", dir, "--slurm-file", old}, "警告: " + old + " の Slurm の状態は 10m0s 前のものです"},
		{[]string{"free", "--live-dir", dir, "--slurm-file", old, "--format", "json"}, "Slurm's view in " + old + " is 10m0s old"},
	} {
		code, out, errs := runApp(t, now, "[cluster]\nname = \"c1\"\n", ja, asked, noted, tc.args...)
		if code != 0 || !strings.Contains(out, tc.want) {
			t.Errorf("%v: exit %d, want 0 and %q in\n%s%s", tc.args, code, tc.want, out, errs)
		}
	}
}
