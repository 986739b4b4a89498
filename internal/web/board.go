package web

import (
	"bytes"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/board"
)

// The board page (GET /): every GPU of the live board as a cell, grouped
// by partition and model. The page and the event stream render the same
// fragment ("boardfrag" of board.html), so the script only swaps it in.

// stateLook is how a state reads without colour: a word (the state's
// own name) and a symbol.
type stateLook struct {
	State  board.State
	Symbol string
	Means  string
}

// Word is the state's name, as the cells and the legend print it.
func (l stateLook) Word() string { return string(l.State) }

// legend is every state's look, in the legend's order.
func legend() [9]stateLook {
	return [...]stateLook{
		{board.Free, "○", "no job holds it: you can get it now"},
		{board.Busy, "●", "allocated to a job and working"},
		{board.Idle, "◐", "allocated, but its jobs idle (the agent's idle rule)"},
		{board.Foreign, "⚠", "a process outside the GPU's job, or on a GPU no job holds"},
		{board.Reserved, "R", "free, in a Slurm reservation in force"},
		{board.Booked, "B", "free, but a note claims it"},
		{board.Drained, "⊘", "Slurm drains the node"},
		{board.Down, "✕", "Slurm has the node down, or does not know it"},
		{board.Stale, "?", "no fresh snapshot from the node's agent: state unknown"},
	}
}

// lookOf is s's look in the legend; a state the legend lacks gets a dot.
func lookOf(s board.State) stateLook {
	for _, l := range legend() {
		if l.State == s {
			return l
		}
	}
	return stateLook{State: s, Symbol: "·"}
}

// view is s's view with web's team mapping, for the status document,
// which names each job's team: the snapshot's view is shared with every
// request, so the mapping goes on a copy.
func (h *Handler) view(s *board.Snapshot) *board.View {
	v := *s.View()
	v.Meta.Team = h.mapping.Team
	return &v
}

// frag is the fragment of s as h's viewer sees it: the snapshot's own
// view (the cells name a job's team through h.mapping themselves).
func (h *Handler) frag(s *board.Snapshot) boardFrag { return boardFrag{v: s.View(), h: h} }

// boardFrag is the HTML rendering of a board's view for one viewer (h):
// the template reads the view through these methods, which only format
// (times in h's zone, names as h's viewer may see them, en dashes for
// what is not known).
type boardFrag struct {
	v *board.View
	h *Handler
	// NowMS is the server's clock, 0 as fragOf renders it for all: the
	// page puts its own in (renderedFrag.head), the stream sends its own.
	NowMS int64
}

// age is a time shown as "N s ago" and ticked by the script.
type age struct {
	MS   int64
	Text string
}

// maxProblems bounds the skipped-file lines the page shows.
const maxProblems = 10

// AtMS is the board's time in Unix milliseconds: the script ticks ages
// from it.
func (f boardFrag) AtMS() int64 { return f.v.Board.At.UnixMilli() }

func (f boardFrag) At() string {
	return f.h.tr.Time(f.v.Board.At.In(f.h.o.Location), "2006-01-02 15:04:05 MST")
}

func (f boardFrag) NoAgents() bool { return f.v.Agents.IsZero() }

func (f boardFrag) Agents() age {
	if f.NoAgents() {
		return age{}
	}
	return ageOf(f.v.Agents, f.v.Board.At)
}

// SlurmLine is why Slurm's age is not shown ("" when it is).
func (f boardFrag) SlurmLine() string {
	switch {
	case !f.v.SlurmAsked:
		return "Slurm not asked: drains, partitions and reservations are unknown"
	case f.SlurmBad():
		return "Slurm unreachable: " + f.v.Meta.SlurmError
	}
	return ""
}

func (f boardFrag) SlurmBad() bool { return f.v.SlurmAsked && f.v.Meta.SlurmError != "" }

func (f boardFrag) Slurm() age {
	if f.SlurmLine() != "" {
		return age{}
	}
	return ageOf(f.v.Board.SlurmAt, f.v.Board.At)
}

func (f boardFrag) StaleNodes() []string { return f.v.Stale }
func (f boardFrag) NotesError() string   { return f.v.NotesError }

// Problems are the first maxProblems problems; MoreProblems counts the
// rest.
func (f boardFrag) Problems() []string {
	var out []string
	for _, p := range f.v.Meta.Problems[:min(len(f.v.Meta.Problems), maxProblems)] {
		out = append(out, p.String())
	}
	return out
}

func (f boardFrag) MoreProblems() int { return max(0, len(f.v.Meta.Problems)-maxProblems) }

// FreeTotal and FreeReserved are the board's own count (board.IsFree),
// as gpuacct free and status and the API say it.
func (f boardFrag) FreeTotal() int    { return f.v.Board.Totals.FreeGPUs }
func (f boardFrag) FreeReserved() int { return f.v.Board.Totals.ReservedGPUs }
func (f boardFrag) Booked() int       { return f.v.Board.Totals.Booked }
func (f boardFrag) Idle() int         { return f.v.Board.Totals.IdleAllocated }
func (f boardFrag) Running() int      { return f.v.Board.Totals.RunningJobs }

func (f boardFrag) Legend() [9]stateLook { return legend() }

type freeRow struct {
	Model, Partition string
	Free, Reserved   int
	Nodes            string
}

func (f boardFrag) Free() []freeRow {
	var out []freeRow
	for _, fc := range f.v.Board.Totals.Free {
		r := freeRow{Model: orDash(fc.Model), Partition: orDash(fc.Partition), Free: fc.Free, Reserved: fc.Reserved}
		for i, nc := range fc.Nodes {
			if i > 0 {
				r.Nodes += " "
			}
			r.Nodes += nc.String()
		}
		out = append(out, r)
	}
	return out
}

// bigBoard is how many nodes a board may have and still show every
// GPU's cell in full: past it the page leads with a summary, and its
// groups are collapsed, one line of small cells per node (their state and
// jobs in the title), so the page and its first event stay bounded at
// ten thousand GPUs (docs/performance.md).
const bigBoard = 64

// maxTroubled bounds the nodes in trouble the summary names.
const maxTroubled = 100

// Big is whether the board is past bigBoard nodes.
func (f boardFrag) Big() bool { return len(f.v.Board.Nodes) > bigBoard }

// troubledNode is a node in trouble as the summary lists it.
type troubledNode struct {
	Name, Why, Reason string
}

// Troubled are the first maxTroubled nodes in trouble; MoreTroubled
// counts the rest.
func (f boardFrag) Troubled() []troubledNode {
	var out []troubledNode
	for _, t := range f.v.Troubled[:min(len(f.v.Troubled), maxTroubled)] {
		out = append(out, troubledNode{Name: t.Node.Name, Why: strings.Join(t.Why, ", "), Reason: t.Node.Reason})
	}
	return out
}

func (f boardFrag) MoreTroubled() int { return max(0, len(f.v.Troubled)-maxTroubled) }

// groupCounts is a group's row of the summary: its GPUs by state, those
// reserved, booked or with a foreign process under Other.
type groupCounts struct {
	Key, Partition, Model                                string
	Free, Busy, Idle, Drained, Down, Stale, Other, Total int
}

func (g gpuGroup) Counts() groupCounts {
	st := g.g.States
	c := groupCounts{Key: g.Key(), Partition: g.Partition(), Model: g.Model(), Free: st[board.Free], Busy: st[board.Busy],
		Idle: st[board.Idle], Drained: st[board.Drained], Down: st[board.Down], Stale: st[board.Stale], Total: g.g.Total}
	c.Other = c.Total - c.Free - c.Busy - c.Idle - c.Drained - c.Down - c.Stale
	return c
}

// Key names the group across boards (its index may change): the page
// keeps which groups a viewer opened by it.
func (g gpuGroup) Key() string { return g.g.Partition + "/" + g.g.Model }

// gpuGroup is a group of the view as its heading shows it.
type gpuGroup struct {
	g     *board.Group
	index int
	f     boardFrag
}

func (f boardFrag) Groups() []gpuGroup {
	out := make([]gpuGroup, 0, len(f.v.Groups))
	for i := range f.v.Groups {
		out = append(out, gpuGroup{g: &f.v.Groups[i], index: i, f: f})
	}
	return out
}

// ID is the group's heading's element id: "grp-<index>" (a change of
// the groups sends the whole board, so the index is stable).
func (g gpuGroup) ID() string        { return "grp-" + strconv.Itoa(g.index) }
func (g gpuGroup) Partition() string { return orDash(g.g.Partition) }
func (g gpuGroup) Model() string     { return orDash(g.g.Model) }
func (g gpuGroup) Free() int         { return g.g.Free }
func (g gpuGroup) Total() int        { return g.g.Total }

func (g gpuGroup) Nodes() []boardNode {
	out := make([]boardNode, 0, len(g.g.Rows))
	for i := range g.g.Rows {
		r := &g.g.Rows[i]
		id := "row-" + strconv.Itoa(g.index) + "-" + strconv.Itoa(i)
		if g.f.Big() {
			out = append(out, g.f.compactNode(id, g.g.Model, r))
			continue
		}
		n := boardNode{Node: r.Node, ID: id, Also: r.Also, Book: bookURL(r.Node.Name, -1), Changes: g.f.changes(r.Node),
			Notes: g.f.notes(r.Node.Notes), GPUs: make([]cellView, 0, len(r.GPUs))}
		if n.Stale && !n.SnapshotAt.IsZero() {
			a := ageOf(n.SnapshotAt, g.f.v.Board.At)
			n.StaleSince = &a
		}
		for _, gpu := range r.GPUs {
			n.GPUs = append(n.GPUs, g.f.cell(r.Node, gpu))
		}
		out = append(out, n)
	}
	return out
}

// compactNode is a node's row of a big board: small cells whose title
// says the state and jobs, not what moves every snapshot (utilization,
// memory), so a row changes, and is sent again, only when they do. The
// data attributes are what the page's search looks in.
//
// The cells are written here, not by the template: ten thousand of them
// through html/template take several times as long (a board's page
// within 100 ms at 10,000 GPUs). Every text in them is escaped.
func (f boardFrag) compactNode(id, model string, r *board.Row) boardNode {
	n := boardNode{Node: r.Node, ID: id, Compact: true, Model: model, Book: bookURL(r.Node.Name, -1), Changes: f.changes(r.Node)}
	var users, jobs []string
	var b strings.Builder
	for _, g := range r.GPUs {
		look := lookOf(g.State)
		title := "GPU " + strconv.Itoa(g.Index) + " " + look.Word()
		for _, j := range g.Jobs {
			jid, u := strconv.FormatUint(j.Job, 10), f.h.v.user(j.User)
			title += " · job " + jid + " " + u
			if !slices.Contains(jobs, jid) {
				jobs = append(jobs, jid)
			}
			if u != "" && !slices.Contains(users, u) {
				users = append(users, u)
			}
		}
		for i := range g.Slices {
			as := sliceGPU(g, &g.Slices[i])
			sl := f.sliceHead(r.Node, &as, g.Slices[i].Profile)
			title += " · " + sl.Title
			for _, j := range sl.Jobs {
				if !slices.Contains(jobs, j.ID) {
					jobs = append(jobs, j.ID)
				}
				if j.User != "" && !slices.Contains(users, j.User) {
					users = append(users, j.User)
				}
			}
		}
		if g.Strip != nil {
			title += " · last hour " + stripText(g.Strip)
		}
		b.WriteString(`<span class="gpu mini s-`)
		b.WriteString(template.HTMLEscapeString(string(look.State)))
		b.WriteString(`" id="gpu-`)
		b.WriteString(template.HTMLEscapeString(r.Node.Name))
		b.WriteString("-")
		b.WriteString(strconv.Itoa(g.Index))
		b.WriteString(`" tabindex="0" role="img" title="`)
		b.WriteString(template.HTMLEscapeString(title))
		b.WriteString(`"><span class="sym" aria-hidden="true">`)
		b.WriteString(template.HTMLEscapeString(look.Symbol))
		b.WriteString(`</span></span>`)
	}
	n.Cells = template.HTML(b.String()) // escaped above
	n.Users, n.Jobs = strings.Join(users, " "), strings.Join(jobs, " ")
	return n
}

// boardNode is a node's row of a group: the node as the view has it
// (name, condition, reason, reservations), with what the row formats.
type boardNode struct {
	*board.Node
	// ID is the node row's element id: "row-<group>-<index>".
	ID string
	// Compact is a big board's row (compactNode): Model, Users and Jobs
	// are set for it only.
	Compact            bool
	Model, Users, Jobs string
	Cells              template.HTML
	Also               []string
	// StaleSince is the stale node's last snapshot; nil: none ever.
	StaleSince *age
	Notes      []cellNote
	GPUs       []cellView
	// Book is the node's booking page; Changes its state changes in the
	// last hour.
	Book    string
	Changes []cellChange
}

// cellView is one GPU's cell, formatted once: the template reads each
// of its texts several times (and a field costs it less than a method).
type cellView struct {
	ID    string
	Index int
	Look  stateLook
	Model string
	UUID  string
	Util  string
	Mem   string
	// MemPct is the width of the memory bar, 0..100.
	MemPct    int
	Power     string
	Temp      string
	IdleSince *age
	Jobs      []cellJob
	Procs     []cellProc
	Notes     []cellNote
	// Strip is the last hour, Runs its jobs for the detail; Slices the
	// MIG slices; Book the GPU's booking page.
	Strip  template.HTML
	Runs   []cellRun
	Slices []cellSlice
	Book   string
}

func (f boardFrag) cell(n *board.Node, g *board.GPU) cellView {
	c := cellView{ID: "gpu-" + n.Name + "-" + strconv.Itoa(g.Index), Index: g.Index, Look: lookOf(g.State), Model: g.Model,
		UUID: g.UUID, Util: missing, Mem: missing, Power: missing, Temp: missing, Jobs: f.jobs(n, g), Procs: f.procs(g), Notes: f.notes(g.Notes),
		Runs: f.runs(g.Strip), Slices: f.slices(n, g), Book: bookURL(n.Name, g.Index)}
	if len(c.Slices) == 0 {
		c.Strip = f.stripHTML(g.Strip) // a GPU in slices says no utilization: its slices' strips tell
	}
	if g.Util != nil {
		c.Util = strconv.FormatUint(uint64(*g.Util), 10) + " %"
	}
	if g.MemUsedMiB != nil && g.MemTotalMiB != nil {
		c.Mem = gib(*g.MemUsedMiB) + "/" + gib(*g.MemTotalMiB) + " GiB"
		if *g.MemTotalMiB > 0 {
			c.MemPct = int(min(100, *g.MemUsedMiB*100 / *g.MemTotalMiB))
		}
	} else if g.MemUsedMiB != nil {
		c.Mem = gib(*g.MemUsedMiB) + " GiB"
	}
	if g.PowerMW != nil {
		c.Power = strconv.FormatUint(uint64(*g.PowerMW/1000), 10) + " W"
	}
	if g.TempC != nil {
		c.Temp = strconv.FormatUint(uint64(*g.TempC), 10) + " °C"
	}
	if g.IdleSince != nil && !g.IdleSince.IsZero() {
		a := ageOf(*g.IdleSince, f.v.Board.At)
		c.IdleSince = &a
	}
	return c
}

type cellJob struct {
	ID, URL, User, Team string
	Elapsed             *age
}

func (f boardFrag) jobs(n *board.Node, g *board.GPU) []cellJob {
	var out []cellJob
	for _, j := range g.Jobs {
		id := strconv.FormatUint(j.Job, 10)
		jv := cellJob{ID: id, URL: jobPath("/job", n.Cluster, id), User: f.h.v.user(j.User)}
		if j.Account != "" || j.User != "" {
			jv.Team = f.h.mapping.Team(j.Account, j.User)
		}
		if !j.Start.IsZero() {
			a := ageOf(j.Start, f.v.Board.At)
			jv.Elapsed = &a
		}
		out = append(out, jv)
	}
	return out
}

type cellProc struct {
	PID, User, Name, Job, Mem string
	Foreign                   bool
}

func (f boardFrag) procs(g *board.GPU) []cellProc {
	// The board's rule of what is foreign, so a cell and the alerts agree.
	foreign := map[uint32]bool{}
	for _, p := range board.ForeignProcs(*g) {
		foreign[p.PID] = true
	}
	var out []cellProc
	for _, p := range g.Procs {
		pv := cellProc{PID: strconv.FormatUint(uint64(p.PID), 10), User: orDash(f.h.v.user(p.User)), Job: missing,
			Mem: gib(p.MemUsedMiB) + " GiB", Foreign: foreign[p.PID]}
		if p.Job != 0 {
			pv.Job = strconv.FormatUint(p.Job, 10)
		}
		if f.h.v.sees(p.User) {
			pv.Name = p.Name // what another user runs is theirs, as their name is
		}
		out = append(out, pv)
	}
	return out
}

type cellNote struct {
	Text, Author, Until string
}

func (f boardFrag) notes(ns []board.Note) []cellNote {
	var out []cellNote
	for _, n := range ns {
		out = append(out, cellNote{Text: n.Text, Author: orDash(f.h.v.user(n.Author)), Until: f.h.tr.Time(n.Until.In(f.h.o.Location), "2006-01-02 15:04 MST")})
	}
	return out
}

func ageOf(t, at time.Time) age {
	return age{MS: t.UnixMilli(), Text: fmtAge(at.Sub(t))}
}

// fmtAge is a duration as the board shows ages (board.js's fmt does the
// same).
func fmtAge(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 0:
		s = 0
		fallthrough
	case s < 90:
		return strconv.FormatInt(s, 10) + " s"
	case s < 90*60:
		return strconv.FormatInt((s+30)/60, 10) + " min"
	case s < 48*3600:
		return strconv.FormatInt(s/3600, 10) + " h " + strconv.FormatInt(s%3600/60, 10) + " min"
	}
	return strconv.FormatInt(s/86400, 10) + " d " + strconv.FormatInt(s%86400/3600, 10) + " h"
}

// gib is MiB as GiB with one decimal.
func gib(mib uint64) string {
	return strconv.FormatFloat(float64(mib)/1024, 'f', 1, 64)
}

func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// boardOffMsg is the answer of the board's routes when serve runs none.
const boardOffMsg = "the live board is off: this dashboard was started without the agents' snapshots (gpuacct serve runs it from board.live_dir); the accounting is at /accounting"

func errBoardOff() *httpError {
	return &httpError{code: http.StatusServiceUnavailable, msg: boardOffMsg}
}

type boardPage struct {
	base
	// Board stands for the fragment (boardMark): writeBoardPage puts
	// it in.
	Board template.HTML
	// Queue is what waits for GPUs; nil: no table.
	Queue *queueView
	// Refresh is the no-script reload period, seconds.
	Refresh int
}

// GET /: the board.
func (h *Handler) boardPage(w http.ResponseWriter, r *http.Request) error {
	if r.URL.RawQuery != "" {
		// "/" was the accounting overview: its links, with their window,
		// still lead there.
		http.Redirect(w, r, "/accounting?"+r.URL.RawQuery, http.StatusFound)
		return nil
	}
	if h.o.Board == nil {
		// Not the error page's "database unavailable": the ledger is fine.
		v := struct {
			base
			Code    int
			Message string
		}{base: h.base(r, nil, "Live board off"), Code: http.StatusServiceUnavailable, Message: boardOffMsg}
		w.Header().Set("Cache-Control", "no-store")
		h.render(w, http.StatusServiceUnavailable, "error", &v)
		return nil
	}
	budgetLine := h.viewerBudget(r)
	if h.v.private {
		// As the event stream shows it to them: every name hidden.
		h = h.anonymous()
	}
	v := boardPage{base: h.base(r, nil, "Live board")}
	v.Budget, v.BudgetURL = budgetLine.Name, budgetLine.URL
	v.Refresh = int(h.o.BoardRefresh.Seconds())
	f, err := h.fragOf(h.o.Board.Current(r.Context()))
	if err != nil {
		return err
	}
	v.Queue = h.queue()
	return h.writeBoardPage(w, &v, f, h.o.Now().UnixMilli())
}

// renderSections renders the fragment's parts that an event may send
// alone, in the fragment's order: the top, then each group's heading
// and node rows.
func (h *Handler) renderSections(s *board.Snapshot) ([]section, error) {
	f := h.frag(s)
	t := h.pages["board"]
	one := func(id, name string, v any) (section, error) {
		var b bytes.Buffer
		if err := t.ExecuteTemplate(&b, name, v); err != nil {
			return section{}, fmt.Errorf("render board %s: %w", id, err)
		}
		return section{id: id, html: b.Bytes()}, nil
	}
	top, err := one("board-top", "boardtop", f)
	if err != nil {
		return nil, err
	}
	out := []section{top}
	for _, g := range f.Groups() {
		sec, err := one(g.ID(), "boardhead", g)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
		for _, n := range g.Nodes() {
			if sec, err = one(n.ID, "boardnode", n); err != nil {
				return nil, err
			}
			out = append(out, sec)
		}
	}
	return out, nil
}
