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

	"github.com/aicloud/gpusuite/internal/board"
	"github.com/aicloud/gpusuite/internal/report"
	"github.com/aicloud/gpusuite/internal/requests"
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

// Row is one listed note or request; `gpuacct note list --format json`
// prints rows as the notes document (Doc).
type Row struct {
	// ID is nil for a note not yet added.
	ID      *int64
	Cluster string
	Node    string
	GPU     *int
	// Until is nil only for a refused request that named no time.
	Until     *time.Time
	Text      string
	Author    string
	UID       int
	Created   time.Time
	RemovedAt *time.Time
	RemovedBy string
	Status    string
	Error     string
}

// Rows lists kept (store.Notes at now, with all or not) with the
// requests of reqs: pending ones always, refused ones with all. Without
// all: active notes and pending requests, by node, GPU (the whole node
// first) and id (notes not yet added last). With all: every note and
// request, newest first.
func Rows(kept []store.Note, reqs requests.NoteLists, now time.Time, all bool) []Row {
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
	fromRequest := func(q requests.Request, status string) Row {
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
		if i, ok := byID[n.ID]; ok && q.Action == requests.NoteRemove {
			k := out[i]
			r.Cluster, r.Node, r.GPU, r.Until, r.Text = k.Cluster, k.Node, k.GPU, k.Until, k.Text
		}
		return r
	}
	for _, q := range reqs.Pending {
		if q.Action == requests.NoteRemove && q.Note != nil {
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

// Doc is rows as the notes document (gpusuite.notes/v1) the web's
// /api/v1/notes serves, each with its status; a request's error is kept
// too.
func Doc(rows []Row, at time.Time, all bool) board.NotesDoc {
	list := make([]board.ListedNote, 0, len(rows))
	for _, r := range rows {
		n := board.ListedNote{Note: board.Note{GPU: r.GPU, Node: r.Node, Text: r.Text, Author: r.Author},
			Cluster: r.Cluster, Created: r.Created, RemovedAt: r.RemovedAt, RemovedBy: r.RemovedBy, Status: r.Status, Error: r.Error}
		if r.ID != nil {
			n.ID = *r.ID
		}
		if r.Until != nil {
			n.Until = *r.Until
		}
		list = append(list, n)
	}
	return board.NewNotesDoc(at, all, list)
}

// WriteJSON writes rows as the notes document (Doc), indented; text is
// kept as typed (markup unescaped: readers escape it where they show
// it).
func WriteJSON(w io.Writer, rows []Row, at time.Time, all bool) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Doc(rows, at, all)); err != nil {
		return fmt.Errorf("note list: write json: %w", err)
	}
	return nil
}

// Known are the clusters of nodes (the ledger's nodes) and of rows,
// sorted: a note may name a cluster whose nodes were forgotten.
func Known(nodes []store.NodeRow, rows []Row) []string {
	seen := map[string]bool{}
	for _, n := range nodes {
		seen[n.Cluster] = true
	}
	for _, r := range rows {
		if r.Cluster != "" {
			seen[r.Cluster] = true
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// InScope keeps the rows of s's clusters; a request that names no
// cluster (filed before clusters were recorded) stays.
func InScope(rows []Row, s report.Scope) []Row {
	out := rows[:0:0]
	for _, r := range rows {
		if r.Cluster == "" || s.Has(r.Cluster) {
			out = append(out, r)
		}
	}
	return out
}

// WriteTable writes rows as a table, times in loc; with several (more
// than one cluster listed) a CLUSTER column leads, so that two clusters'
// nodes of one name stay apart, and with all a STATUS column follows.
// Text is printed as typed, control characters (only a hand-made
// request can carry them) shown as '?'.
func WriteTable(w io.Writer, rows []Row, loc *time.Location, all, several bool) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	head := "ID\tNODE\tGPU\tUNTIL\tAUTHOR\tTEXT"
	if several {
		head = "CLUSTER\t" + head
	}
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
		line := strings.Join([]string{idCell, Plain(r.Node), gpu, until, Plain(r.Author), Plain(r.Text)}, "\t")
		if several {
			line = Plain(r.Cluster) + "\t" + line
		}
		if all {
			status := r.Status
			if r.Error != "" {
				status += ": " + strings.TrimPrefix(r.Error, "refused: ")
			}
			line += "\t" + Plain(status)
		}
		fmt.Fprintln(tw, line)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("note list: write: %w", err)
	}
	return nil
}

// Plain keeps a note's text (or any cell) on its line and in its order
// in a terminal: control characters (tabs, newlines, terminal escapes)
// and format characters (U+202E) become '?'.
func Plain(s string) string {
	return strings.Map(func(c rune) rune {
		if unicode.IsControl(c) || unicode.Is(unicode.Cf, c) {
			return '?'
		}
		return c
	}, s)
}
