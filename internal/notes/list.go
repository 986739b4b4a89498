package notes

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/aicloud/gpusuite/internal/ignorereq"
	"github.com/aicloud/gpusuite/internal/store"
)

// Statuses of a listed note.
const (
	Active  = "active"
	Expired = "expired"
	Removed = "removed"
	// Pending: a request the writer has not applied yet (a note to add,
	// or a note whose removal is asked).
	Pending = "pending"
	// Refused: a request the writer refused (--all only); Error says why.
	Refused = "refused"
)

// Row is one listed note; its JSON is `gpuacct note list --format json`.
type Row struct {
	// ID is nil for a note not yet added.
	ID      *int64 `json:"id"`
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	GPU     *int   `json:"gpu"`
	// Until is nil only for a refused request that named no time.
	Until     *time.Time `json:"until"`
	Text      string     `json:"text"`
	Author    string     `json:"author"`
	UID       int        `json:"uid"`
	Created   time.Time  `json:"created"`
	RemovedAt *time.Time `json:"removed_at"`
	RemovedBy string     `json:"removed_by"`
	Status    string     `json:"status"`
	Error     string     `json:"error,omitempty"`
}

// Rows lists kept (store.Notes at now, with all or not) with the
// requests of reqs: pending ones always, refused ones with all. Without
// all: active notes and pending requests, by node, GPU (the whole node
// first) and id (notes not yet added last). With all: every note and
// request, newest first.
func Rows(kept []store.Note, reqs ignorereq.NoteLists, now time.Time, all bool) []Row {
	out := make([]Row, 0, len(kept)+len(reqs.Pending))
	byID := map[int64]int{}
	for _, n := range kept {
		until := n.Until.UTC()
		r := Row{ID: &n.ID, Cluster: n.Cluster, Node: n.Node, GPU: n.GPU, Until: &until, Text: n.Text, Author: n.Author,
			UID: n.UID, Created: n.Created.UTC(), RemovedAt: n.RemovedAt, RemovedBy: n.RemovedBy, Status: Active}
		switch {
		case n.RemovedAt != nil:
			r.Status = Removed
		case !n.Until.After(now):
			r.Status = Expired
		}
		byID[n.ID] = len(out)
		out = append(out, r)
	}
	fromRequest := func(q ignorereq.Request, status string) Row {
		r := Row{Cluster: q.Cluster, Author: q.By, UID: q.UID, Created: q.Time.UTC(), Status: status, Error: q.Error}
		n := q.Note
		if n == nil {
			return r
		}
		if n.ID > 0 {
			id := n.ID
			r.ID = &id
		}
		r.Node, r.GPU, r.Text = n.Node, n.GPU, n.Text
		if !n.Until.IsZero() {
			u := n.Until.UTC()
			r.Until = &u
		}
		// A removal names only the note: show what it was about.
		if i, ok := byID[n.ID]; ok && q.Action == ignorereq.NoteRemove {
			k := out[i]
			r.Cluster, r.Node, r.GPU, r.Until, r.Text = k.Cluster, k.Node, k.GPU, k.Until, k.Text
		}
		return r
	}
	for _, q := range reqs.Pending {
		if q.Action == ignorereq.NoteRemove && q.Note != nil {
			if i, ok := byID[q.Note.ID]; ok && out[i].Status == Active {
				out[i].Status, out[i].RemovedBy = Pending, q.By
			}
			continue
		}
		out = append(out, fromRequest(q, Pending))
	}
	if all {
		for _, q := range reqs.Applied {
			if q.Error != "" {
				out = append(out, fromRequest(q, Refused))
			}
		}
		sort.SliceStable(out, func(i, j int) bool {
			if !out[i].Created.Equal(out[j].Created) {
				return out[i].Created.After(out[j].Created)
			}
			return id(out[i]) > id(out[j])
		})
		return out
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if a.Node != b.Node {
			return a.Node < b.Node
		}
		if ga, gb := gpuKey(a.GPU), gpuKey(b.GPU); ga != gb {
			return ga < gb
		}
		return id(a) < id(b)
	})
	return out
}

// id orders notes not yet added after every kept one.
func id(r Row) int64 {
	if r.ID == nil {
		return 1 << 62
	}
	return *r.ID
}

func gpuKey(g *int) int {
	if g == nil {
		return -1
	}
	return *g
}

// WriteJSON writes rows as one indented JSON array; text is kept as typed
// (markup unescaped: readers escape it where they show it).
func WriteJSON(w io.Writer, rows []Row) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(rows); err != nil {
		return fmt.Errorf("note list: write json: %w", err)
	}
	return nil
}

// WriteTable writes rows as a table, times in loc; with all a STATUS
// column follows. Text is printed as typed, control characters (only a
// hand-made request can carry them) shown as '?'.
func WriteTable(w io.Writer, rows []Row, loc *time.Location, all bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	head := "ID\tNODE\tGPU\tUNTIL\tAUTHOR\tTEXT"
	if all {
		head += "\tSTATUS"
	}
	fmt.Fprintln(tw, head)
	for _, r := range rows {
		idCell := "-"
		if r.ID != nil {
			idCell = strconv.FormatInt(*r.ID, 10)
		}
		if !all && r.Status == Pending {
			if r.ID == nil {
				idCell = "pending"
			} else {
				idCell += " (rm pending)"
			}
		}
		gpu := "-"
		if r.GPU != nil {
			gpu = strconv.Itoa(*r.GPU)
		}
		until := "-"
		if r.Until != nil {
			until = r.Until.In(loc).Format("2006-01-02 15:04 MST")
		}
		line := strings.Join([]string{idCell, plain(r.Node), gpu, until, plain(r.Author), plain(r.Text)}, "\t")
		if all {
			status := r.Status
			if r.Error != "" {
				status += ": " + strings.TrimPrefix(r.Error, "refused: ")
			}
			line += "\t" + plain(status)
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("note list: write: %w", err)
	}
	return nil
}

// plain keeps a cell on its line and in its order: control characters
// (tabs, newlines, terminal escapes) and format characters (U+202E)
// become '?'.
func plain(s string) string {
	return strings.Map(func(c rune) rune {
		if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
			return '?'
		}
		return c
	}, s)
}
