package container

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/i18n"
)

// sbuild list: English as text/tabwriter laid it out, byte for byte;
// Japanese headings over their columns by display width.
func TestWriteList(t *testing.T) {
	t.Setenv("TZ", "UTC")
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	es := []Entry{
		{Name: "myproj", Size: 5 << 30, ModTime: at, HasMeta: true, Meta: Meta{Image: "nvcr.io/nvidia/pytorch:24.05-py3", Created: at,
			Setup: "/home/a/setup.sh", SetupSHA256: "0123456789abcdef", SetupExit: 2}},
		{Name: "x", Size: 1 << 20, SizeErr: true, ModTime: at},
	}
	busy := map[string][]string{"myproj": {"12", "13"}}
	cat, err := i18n.New()
	if err != nil {
		t.Fatal(err)
	}
	var en bytes.Buffer
	if err := WriteList(&en, es, busy, cat.English()); err != nil {
		t.Fatal(err)
	}
	// what the list printed before, through text/tabwriter
	var want bytes.Buffer
	tw := tabwriter.NewWriter(&want, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tENROOT NAME\tSIZE\tCREATED\tIMAGE\tSETUP\tIN USE")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", "myproj", "pyxis_myproj", human(5<<30), at.Local().Format("2006-01-02 15:04"),
		"nvcr.io/nvidia/pytorch:24.05-py3", "setup.sh 0123456789ab FAILED(2)", "job 12,13")
	fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", "x", "pyxis_x", ">"+human(1<<20), at.Format("2006-01-02 15:04"), "?", "-", "-")
	if err := tw.Flush(); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want.String(), en.String()); d != "" {
		t.Errorf("English list (-tabwriter +got):\n%s", d)
	}

	var ja bytes.Buffer
	if err := WriteList(&ja, es, busy, cat.Printer(i18n.Japanese)); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(ja.String(), "\n"), "\n")
	if !strings.HasPrefix(lines[0], "名前") || !strings.Contains(lines[1], "ジョブ 12,13") || !strings.Contains(lines[1], "2026年3月2日") {
		t.Fatalf("Japanese list:\n%s", ja.String())
	}
	// each column starts at its heading's display column on every line
	heads := []string{"名前", "enroot名", "サイズ", "作成", "イメージ", "セットアップ", "使用中"}
	pos := -1
	for i, h := range heads {
		p := strings.Index(lines[0], h)
		if p < 0 || p <= pos {
			t.Fatalf("heading %q not in order in %q", h, lines[0])
		}
		pos = p
		w := i18n.Width(lines[0][:p])
		for _, l := range lines[1:] {
			if w > len(l) {
				t.Errorf("line %q shorter than heading %d", l, i)
				continue
			}
			// the cell under the heading starts after a space, at w
			prefix := takeWidth(l, w)
			if !strings.HasSuffix(prefix, " ") && i > 0 {
				t.Errorf("column %q does not start at display column %d in %q", h, w, l)
			}
			if rest := strings.TrimPrefix(l, prefix); strings.HasPrefix(rest, " ") {
				t.Errorf("column %q does not start at display column %d in %q", h, w, l)
			}
		}
	}
}

// takeWidth is l's prefix of w terminal columns.
func takeWidth(l string, w int) string {
	n := 0
	for i, r := range l {
		if n >= w {
			return l[:i]
		}
		n += i18n.Width(string(r))
	}
	return l
}
