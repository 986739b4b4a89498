package web

import (
	"html/template"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
)

// What a board cell shows beyond the moment: its last hour (a strip of
// one character per minute, the character's height the minute's mean
// utilization, cut into one span per job that held the GPU), its MIG
// slices, and the links to book it. Server-written, so the page shows
// them without its script.

// levels are a minute's utilization, 0 to 100 % in eight steps; gap is
// a minute without a snapshot, unknown one whose snapshots gave no
// utilization.
const (
	gapMark = "·"
	unknown = "?"
)

var levels = [8]string{"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"}

func level(m board.Minute) string {
	switch {
	case !m.Seen:
		return gapMark
	case !m.UtilKnown:
		return unknown
	}
	i := (int(min(m.Util, 100))*7 + 50) / 100
	return levels[i]
}

// compactMarkMinutes is the minutes one mark of a compact cell's title
// stands for. A big board's page carries a title per GPU: sixty marks
// each nearly doubled a 1,000-GPU page; six keep it within a third. The
// minute by minute strip is in the status document's last_hour and in
// a small board's cells.
const compactMarkMinutes = 10

// stripText is the strip in marks of compactMarkMinutes minutes: a
// compact cell's title. A mark is a gap when no minute of it was seen,
// else the mean utilization of its minutes that gave one.
func stripText(s *board.Strip) string {
	var b strings.Builder
	b.Grow(board.StripMinutes / compactMarkMinutes * 3)
	for i := 0; i < board.StripMinutes; i += compactMarkMinutes {
		var m board.Minute
		sum, n := 0, 0
		for _, x := range s.Minutes[i:min(i+compactMarkMinutes, board.StripMinutes)] {
			m.Seen = m.Seen || x.Seen
			if x.Seen && x.UtilKnown {
				sum += int(x.Util)
				n++
			}
		}
		if n > 0 {
			m.Util, m.UtilKnown = uint8((sum+n/2)/n), true
		}
		b.WriteString(level(m))
	}
	return b.String()
}

// runTitle says what a run of the strip is: its job and user, its
// minutes in the viewer's zone and their mean utilization.
func (f boardFrag) runTitle(s *board.Strip, r board.Run) string {
	span := f.clock(s.MinuteAt(r.From)) + "–" + f.clock(s.MinuteAt(r.From+r.N))
	if r.Gap {
		return span + " " + f.h.tr.T("no snapshot")
	}
	t := span + " "
	if r.Job == 0 {
		t += f.h.tr.T("no job")
	} else {
		t += f.h.tr.T("job %s", strconv.FormatUint(r.Job, 10))
		if u := f.h.v.user(r.User); u != "" {
			t += " " + u
		}
		if r.More {
			t += f.h.tr.T(" and others")
		}
	}
	sum, n := 0, 0
	for _, m := range s.Minutes[r.From : r.From+r.N] {
		if m.UtilKnown {
			sum += int(m.Util)
			n++
		}
	}
	if n > 0 {
		t += f.h.tr.T(" · mean %d %%", (sum+n/2)/n)
	}
	return t
}

func (f boardFrag) clock(t time.Time) string { return t.In(f.h.o.Location).Format("15:04") }

// stripHTML is the strip as spans, one per run, the jobs' runs in two
// alternating classes so that a change of job shows; every text escaped.
func (f boardFrag) stripHTML(s *board.Strip) template.HTML {
	if s == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(`<span class="strip" role="img" aria-label="last hour, one mark a minute">`)
	alt := 0
	for _, r := range s.Runs() {
		cls := "nj"
		switch {
		case r.Gap:
			cls = "gap"
		case r.Job != 0:
			cls = "j" + strconv.Itoa(alt)
			alt ^= 1
		}
		b.WriteString(`<span class="`)
		b.WriteString(cls)
		b.WriteString(`" title="`)
		b.WriteString(template.HTMLEscapeString(f.runTitle(s, r)))
		b.WriteString(`">`)
		for _, m := range s.Minutes[r.From : r.From+r.N] {
			b.WriteString(level(m))
		}
		b.WriteString(`</span>`)
	}
	b.WriteString(`</span>`)
	return template.HTML(b.String()) // escaped above
}

// cellRun is a run of the strip as the cell's detail lists it.
type cellRun struct{ Text string }

// runs are the strip's runs of jobs, for the detail.
func (f boardFrag) runs(s *board.Strip) []cellRun {
	var out []cellRun
	for _, r := range s.Runs() {
		if r.Job != 0 {
			out = append(out, cellRun{Text: f.runTitle(s, r)})
		}
	}
	return out
}

// cellSlice is a MIG slice nested in its GPU's cell.
type cellSlice struct {
	Profile string
	Look    stateLook
	Util    string
	Mem     string
	Jobs    []cellJob
	Procs   []cellProc
	Strip   template.HTML
	// Title is the slice's line as a compact cell's title says it.
	Title string
}

func (f boardFrag) slices(n *board.Node, g *board.GPU) []cellSlice {
	var out []cellSlice
	for i := range g.Slices {
		sl := &g.Slices[i]
		as := sliceGPU(g, sl)
		c := f.sliceHead(n, &as, sl.Profile)
		c.Util, c.Mem, c.Procs, c.Strip = missing, missing, f.procs(&as), f.stripHTML(sl.Strip)
		if sl.Util != nil {
			c.Util = strconv.FormatUint(uint64(*sl.Util), 10) + " %"
		}
		if sl.MemUsedMiB != nil && sl.MemTotalMiB != nil {
			c.Mem = gib(*sl.MemUsedMiB) + "/" + gib(*sl.MemTotalMiB) + " GiB"
		}
		out = append(out, c)
	}
	return out
}

// sliceGPU is slice sl of g as a GPU of its own, so its jobs and
// processes are formatted (and hidden) as a whole GPU's are.
func sliceGPU(g *board.GPU, sl *board.Slice) board.GPU {
	return board.GPU{Index: g.Index, UUID: sl.UUID, State: sl.State, Jobs: sl.Jobs, Procs: sl.Procs}
}

// sliceHead is what a compact cell's title says of a slice (as, its
// sliceGPU): its profile, state and jobs, and Title, the line of them;
// not its figures, processes or strip.
func (f boardFrag) sliceHead(n *board.Node, as *board.GPU, profile string) cellSlice {
	c := cellSlice{Profile: orDash(profile), Look: lookOf(as.State), Jobs: f.jobs(n, as)}
	c.Title = c.Profile + " " + c.Look.Word()
	for _, j := range c.Jobs {
		c.Title += " · job " + j.ID + " " + j.User
	}
	return c
}

// bookURL is the booking page of a node, or of one GPU of it (gpu ≥ 0).
func bookURL(node string, gpu int) string {
	u := "/book?node=" + url.QueryEscape(node)
	if gpu >= 0 {
		u += "&gpu=" + strconv.Itoa(gpu)
	}
	return u
}

// cellChange is a node's state change as its row says it.
type cellChange struct{ At, From, To string }

func (f boardFrag) changes(n *board.Node) []cellChange {
	out := make([]cellChange, 0, len(n.Changes))
	for _, c := range n.Changes {
		out = append(out, cellChange{At: f.clock(c.At), From: c.From, To: c.To})
	}
	return out
}

// FreeSlices are the free MIG slices per model, profile and partition;
// none on a board without slices.
func (f boardFrag) FreeSlices() []freeRow {
	var out []freeRow
	for _, sc := range f.v.Board.Totals.FreeSlices {
		r := freeRow{Model: orDash(sc.Model) + " " + orDash(sc.Profile), Partition: orDash(sc.Partition), Free: sc.Free}
		for i, nc := range sc.Nodes {
			if i > 0 {
				r.Nodes += " "
			}
			r.Nodes += nc.String()
		}
		out = append(out, r)
	}
	return out
}
