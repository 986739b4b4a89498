package notes

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/aicloud/gpusuite/internal/requests"
	"github.com/aicloud/gpusuite/internal/store"
)

func intp(i int) *int { return &i }

func TestParseTarget(t *testing.T) {
	for _, tc := range []struct {
		in   string
		node string
		gpu  *int
		err  string
	}{
		{"gpu01", "gpu01", nil, ""},
		{"gpu01:3", "gpu01", intp(3), ""},
		{"node-a.b_c:0", "node-a.b_c", intp(0), ""},
		{"", "", nil, `give NODE or NODE:GPU, e.g. gpu01:3: node name "" is empty`},
		{":3", "", nil, "is empty"},
		{"gpu01:x", "", nil, `GPU "x" in "gpu01:x" is not an index 0..1023: give NODE:GPU, e.g. gpu01:3`},
		{"gpu01:-1", "", nil, "is not an index"},
		{"gpu01:1024", "", nil, "is not an index"},
		{"gpu/01", "", nil, `holds '/'`},
	} {
		t.Run(tc.in, func(t *testing.T) {
			node, gpu, err := ParseTarget(tc.in)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseTarget(%q) error %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || node != tc.node || !cmp.Equal(gpu, tc.gpu) {
				t.Fatalf("ParseTarget(%q) = %q, %v, %v", tc.in, node, gpu, err)
			}
		})
	}
}

func TestParseUntil(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC) // a Monday
	for _, tc := range []struct {
		in   string
		want time.Time
		err  string
	}{
		{"4h", now.Add(4 * time.Hour), ""},
		{"3d", now.Add(72 * time.Hour), ""},
		{"2w", now.Add(14 * 24 * time.Hour), ""},
		{"90m", now.Add(90 * time.Minute), ""},
		{"1h30m", now.Add(90 * time.Minute), ""},
		{"90d", now.Add(90 * 24 * time.Hour), ""},
		{"2026-03-06T18:00", time.Date(2026, 3, 6, 17, 0, 0, 0, time.UTC), ""}, // read in report.tz
		{"now+2days", now.Add(48 * time.Hour), ""},
		{"soon", time.Time{}, `--until "soon" is neither a duration like 4h or 3d nor a time: use YYYY-MM-DD`},
		{"yesterday", time.Time{}, `--until "yesterday" (2026-03-01 00:00 CET) is not in the future`},
		{"0h", time.Time{}, "--until 0h is not in the future: give a positive duration like 4h or 3d"},
		{"-4h", time.Time{}, "--until -4h is not in the future: give a positive duration like 4h or 3d"},
		// Seconds were not read as a duration: "neither a duration nor a time".
		{"0s", time.Time{}, "--until 0s is not in the future: give a positive duration like 4h or 3d"},
		{"-1s", time.Time{}, "--until -1s is not in the future"},
		{"90s", now.Add(90 * time.Second), ""},
		{"91d", time.Time{}, `--until "91d" (2026-06-01 12:00 CEST) is more than 90 days ahead: book at most 90 days, and renew the note later`},
		{"2027-01-01", time.Time{}, "is more than 90 days ahead"},
		// n*unit wraps a Duration: 30501w was 3 days, 213504d 25 minutes.
		{"30501w", time.Time{}, `--until "30501w" is more than 90 days ahead`},
		{"213504d", time.Time{}, `--until "213504d" is more than 90 days ahead`},
		{"999999w", time.Time{}, "is more than 90 days ahead"},
		{"129601m", time.Time{}, "is more than 90 days ahead"},
		{"129600m", now.Add(90 * 24 * time.Hour), ""},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseUntil(tc.in, now, berlin)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ParseUntil(%q) error %v, want %q", tc.in, err, tc.err)
				}
				return
			}
			if err != nil || !got.Equal(tc.want) {
				t.Fatalf("ParseUntil(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestRowsStatuses(t *testing.T) {
	now := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	removed := now.Add(-time.Minute)
	kept := []store.Note{
		{ID: 4, Node: "gpu02", Until: now.Add(time.Hour), Text: "active, removal pending", UID: 1000, Created: now.Add(-4 * time.Hour)},
		{ID: 3, Node: "gpu01", Until: now, Text: "expired", Created: now.Add(-3 * time.Hour)},
		{ID: 2, Node: "gpu01", GPU: intp(1), Until: now.Add(time.Hour), Text: "removed", Created: now.Add(-2 * time.Hour), RemovedAt: &removed, RemovedBy: "bob"},
		{ID: 1, Node: "gpu01", GPU: intp(0), Until: now.Add(time.Hour), Text: "active", Created: now.Add(-5 * time.Hour)},
	}
	reqs := requests.NoteLists{
		Pending: []requests.Request{
			{Action: requests.NoteAdd, Note: &requests.Note{Node: "gpu01", Until: now.Add(time.Hour), Text: "pending add"}, By: "carol", UID: 1002, Time: now},
			{Action: requests.NoteRemove, Note: &requests.Note{ID: 4}, By: "dave", UID: 1000, Time: now},
		},
		Applied: []requests.Request{
			{Action: requests.NoteRemove, Note: &requests.Note{ID: 1}, By: "eve", UID: 1003, Time: now.Add(-time.Hour), Error: "refused: note 1 is alice's"},
			{Action: requests.NoteAdd, Note: &requests.Note{ID: 1, Node: "gpu01"}, By: "alice", Time: now.Add(-5 * time.Hour)},
		},
	}
	type st struct{ Text, Status string }
	summary := func(rows []Row) []st {
		var out []st
		for _, r := range rows {
			out = append(out, st{r.Text, r.Status})
		}
		return out
	}
	// Only the active kept notes come from store.Notes without all.
	active := []store.Note{kept[3], kept[0]}
	if diff := cmp.Diff([]st{{"pending add", Pending}, {"active", Active}, {"active, removal pending", Pending}}, summary(Rows(active, reqs, now, false))); diff != "" {
		t.Errorf("active rows (-want +got):\n%s", diff)
	}
	want := []st{{"pending add", Pending}, {"active", Refused}, {"removed", Removed}, {"expired", Expired}, {"active, removal pending", Pending}, {"active", Active}}
	if diff := cmp.Diff(want, summary(Rows(kept, reqs, now, true))); diff != "" {
		t.Errorf("--all rows (-want +got):\n%s", diff)
	}
}

// A hand-made request's text cannot break or reorder the table's line.
func TestWriteTablePlain(t *testing.T) {
	var b strings.Builder
	until := time.Date(2026, 3, 2, 12, 0, 0, 0, time.UTC)
	rows := []Row{{Node: "gpu01", Until: &until, Author: "a\tb", Text: "x\u202ey\u200bz\nw", Status: Active}}
	if err := WriteTable(&b, rows, time.UTC, false, false); err != nil {
		t.Fatal(err)
	}
	want := "ID  NODE   GPU  UNTIL                 AUTHOR  TEXT\n-   gpu01  -    2026-03-02 12:00 UTC  a?b     x?y?z?w\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("table (-want +got):\n%s", diff)
	}
}
