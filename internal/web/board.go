package web

import (
	"bytes"
	"fmt"
	"net/http"
	"sort"
	"strconv"
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

// legendOrder is the states in the legend's order.
func legendOrder() [9]board.State {
	return [...]board.State{board.Free, board.Busy, board.Idle, board.Foreign, board.Reserved, board.Booked, board.Drained, board.Down, board.Stale}
}

// legend is every state's look, in the legend's order.
func legend() []stateLook {
	var out []stateLook
	for _, s := range legendOrder() {
		out = append(out, lookOf(s))
	}
	return out
}

func lookOf(s board.State) stateLook {
	switch s {
	case board.Free:
		return stateLook{s, "○", "no job holds it: you can get it now"}
	case board.Busy:
		return stateLook{s, "●", "allocated to a job and working"}
	case board.Idle:
		return stateLook{s, "◐", "allocated, but its jobs idle (the agent's idle rule)"}
	case board.Foreign:
		return stateLook{s, "⚠", "a process outside the GPU's job, or on a GPU no job holds"}
	case board.Reserved:
		return stateLook{s, "R", "free, in a Slurm reservation in force"}
	case board.Booked:
		return stateLook{s, "B", "free, but a note claims it"}
	case board.Drained:
		return stateLook{s, "⊘", "Slurm drains the node"}
	case board.Down:
		return stateLook{s, "✕", "Slurm has the node down, or does not know it"}
	case board.Stale:
		return stateLook{s, "?", "no fresh snapshot from the node's agent: state unknown"}
	}
	return stateLook{State: s, Symbol: "·"}
}

// boardFrag is what the fragment shows.
type boardFrag struct {
	// AtMS is the board's time in Unix milliseconds: the script ticks
	// ages from it.
	AtMS int64
	// NowMS is the server's clock when the page was rendered: the
	// script's clock offset until the stream sends the server's time.
	NowMS        int64
	At           string
	Agents       age
	NoAgents     bool
	Slurm        age
	SlurmLine    string
	SlurmBad     bool
	Free         []freeRow
	FreeTotal    int
	FreeReserved int
	Booked       int
	Idle         int
	Running      int
	StaleNodes   []string
	Problems     []string
	MoreProblems int
	NotesError   string
	Groups       []gpuGroup
	Legend       []stateLook
}

// age is a time shown as "N s ago" and ticked by the script.
type age struct {
	MS   int64
	Text string
}

type freeRow struct {
	Model, Partition string
	Free, Reserved   int
	Nodes            string
}

type gpuGroup struct {
	// ID is the group's heading's element id: "grp-<index>" (a change of
	// the groups sends the whole board, so the index is stable).
	ID               string
	Partition, Model string
	Free, Total      int
	Nodes            []boardNode
}

type boardNode struct {
	// ID is the node row's element id: "row-<group>-<index>".
	ID                      string
	Name, Condition, Reason string
	NotResponding           bool
	Stale                   bool
	// StaleSince is the stale node's last snapshot; nil: none ever.
	StaleSince   *age
	Also         []string
	Reservations []string
	Notes        []cellNote
	GPUs         []cellView
}

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
}

type cellJob struct {
	ID, URL, User, Team string
	Elapsed             *age
}

type cellProc struct {
	PID, User, Job, Mem string
	Foreign             bool
}

type cellNote struct {
	Text, Author, Until string
	GPU                 string
}

// maxProblems bounds the skipped-file lines the page shows.
const maxProblems = 10

// newBoardFrag builds the fragment's view of one snapshot.
func (h *Handler) newBoardFrag(s *board.Snapshot) boardFrag {
	b := &s.Board
	at := b.At
	f := boardFrag{AtMS: at.UnixMilli(), At: at.In(h.o.Location).Format("2006-01-02 15:04:05 MST"), Legend: legend(),
		Booked: b.Totals.Booked, Idle: b.Totals.IdleAllocated, Running: b.Totals.RunningJobs, NotesError: s.NotesError}
	switch {
	case !s.SlurmAsked:
		f.SlurmLine = "Slurm not asked: drains, partitions and reservations are unknown"
	case s.Meta.SlurmError != "":
		f.SlurmLine, f.SlurmBad = "Slurm unreachable: "+s.Meta.SlurmError, true
	default:
		f.Slurm = ageOf(b.SlurmAt, at)
	}
	var oldest time.Time
	for _, n := range b.Nodes {
		if n.Stale {
			f.StaleNodes = append(f.StaleNodes, n.Name)
		} else if oldest.IsZero() || n.SnapshotAt.Before(oldest) {
			oldest = n.SnapshotAt
		}
	}
	f.NoAgents = oldest.IsZero()
	if !f.NoAgents {
		f.Agents = ageOf(oldest, at)
	}
	for i, p := range s.Meta.Problems {
		if i == maxProblems {
			f.MoreProblems = len(s.Meta.Problems) - i
			break
		}
		f.Problems = append(f.Problems, p.String())
	}
	for _, fc := range b.Totals.Free {
		r := freeRow{Model: orDash(fc.Model), Partition: orDash(fc.Partition), Free: fc.Free, Reserved: fc.Reserved}
		for i, nc := range fc.Nodes {
			if i > 0 {
				r.Nodes += " "
			}
			r.Nodes += nc.String()
		}
		f.Free = append(f.Free, r)
	}
	// The board's own count (board.IsFree), as gpuacct free and status
	// and the API say it.
	f.FreeTotal, f.FreeReserved = b.Totals.FreeGPUs, b.Totals.ReservedGPUs
	f.Groups = h.groups(s, at)
	return f
}

// groups puts each node under its first partition, its GPUs split by
// model; the node's other partitions are named beside it.
func (h *Handler) groups(s *board.Snapshot, at time.Time) []gpuGroup {
	type key struct{ part, model string }
	byKey := map[key]*gpuGroup{}
	var keys []key
	for _, n := range s.Board.Nodes {
		part := ""
		var also []string
		if len(n.Partitions) > 0 {
			part, also = n.Partitions[0], n.Partitions[1:]
		}
		rows := map[string]*boardNode{}
		var models []string
		for _, g := range n.GPUs {
			r := rows[g.Model]
			if r == nil {
				r = h.boardNode(n, also, at)
				rows[g.Model] = r
				models = append(models, g.Model)
			}
			r.GPUs = append(r.GPUs, h.cell(n, g, s, at))
		}
		if len(n.GPUs) == 0 {
			rows[""] = h.boardNode(n, also, at)
			models = append(models, "")
		}
		for _, m := range models {
			k := key{part, m}
			g := byKey[k]
			if g == nil {
				g = &gpuGroup{Partition: orDash(part), Model: orDash(m)}
				byKey[k] = g
				keys = append(keys, k)
			}
			r := rows[m]
			for _, c := range r.GPUs {
				g.Total++
				if board.IsFree(c.Look.State) {
					g.Free++
				}
			}
			g.Nodes = append(g.Nodes, *r)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].part != keys[j].part {
			return keys[i].part < keys[j].part
		}
		return keys[i].model < keys[j].model
	})
	out := make([]gpuGroup, 0, len(keys))
	for gi, k := range keys {
		g := *byKey[k]
		g.ID = "grp-" + strconv.Itoa(gi)
		for ni := range g.Nodes {
			g.Nodes[ni].ID = "row-" + strconv.Itoa(gi) + "-" + strconv.Itoa(ni)
		}
		out = append(out, g)
	}
	return out
}

func (h *Handler) boardNode(n board.Node, also []string, at time.Time) *boardNode {
	r := &boardNode{Name: n.Name, Condition: string(n.Condition), Reason: n.Reason, NotResponding: n.NotResponding,
		Stale: n.Stale, Also: also, Reservations: n.Reservations, Notes: h.notes(n.Notes)}
	if n.Stale && !n.SnapshotAt.IsZero() {
		a := ageOf(n.SnapshotAt, at)
		r.StaleSince = &a
	}
	return r
}

func (h *Handler) cell(n board.Node, g board.GPU, s *board.Snapshot, at time.Time) cellView {
	c := cellView{ID: "gpu-" + n.Name + "-" + strconv.Itoa(g.Index), Index: g.Index, Look: lookOf(g.State), Model: g.Model,
		UUID: g.UUID, Util: "–", Mem: "–", Power: "–", Temp: "–", Notes: h.notes(g.Notes)}
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
		a := ageOf(*g.IdleSince, at)
		c.IdleSince = &a
	}
	for _, j := range g.Jobs {
		id := strconv.FormatUint(j.Job, 10)
		jv := cellJob{ID: id, URL: jobPath("/job", n.Cluster, id), User: h.v.user(j.User), Team: h.mapping.Team(j.Account, j.User)}
		if j.Account == "" && j.User == "" {
			jv.Team = ""
		}
		if !j.Start.IsZero() {
			a := ageOf(j.Start, at)
			jv.Elapsed = &a
		}
		c.Jobs = append(c.Jobs, jv)
	}
	// The board's rule of what is foreign, so a cell and the alerts agree.
	foreign := map[uint32]bool{}
	for _, p := range board.ForeignProcs(g) {
		foreign[p.PID] = true
	}
	for _, p := range g.Procs {
		pv := cellProc{PID: strconv.FormatUint(uint64(p.PID), 10), User: orDash(h.v.user(p.User)), Job: "–", Mem: gib(p.MemUsedMiB) + " GiB",
			Foreign: foreign[p.PID]}
		if p.Job != 0 {
			pv.Job = strconv.FormatUint(p.Job, 10)
		}
		c.Procs = append(c.Procs, pv)
	}
	return c
}

func (h *Handler) notes(ns []board.Note) []cellNote {
	var out []cellNote
	for _, n := range ns {
		v := cellNote{Text: n.Text, Author: orDash(h.v.user(n.Author)), Until: n.Until.In(h.o.Location).Format("2006-01-02 15:04 MST")}
		if n.GPU != nil {
			v.GPU = strconv.Itoa(*n.GPU)
		}
		out = append(out, v)
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
	Board boardFrag
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
	if h.v.private {
		// As the event stream shows it to them: every name hidden.
		h = h.anonymous()
	}
	v := boardPage{base: h.base(r, nil, "Live board")}
	v.Refresh = int(h.o.BoardRefresh.Seconds())
	v.Board = h.newBoardFrag(h.o.Board.Current(r.Context()))
	v.Board.NowMS = h.o.Now().UnixMilli()
	h.render(w, http.StatusOK, "board", &v)
	return nil
}

// renderSections renders the fragment's parts that an event may send
// alone, in the fragment's order: the top, then each group's heading
// and node rows.
func (h *Handler) renderSections(s *board.Snapshot) ([]section, error) {
	f := h.newBoardFrag(s)
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
	for _, g := range f.Groups {
		sec, err := one(g.ID, "boardhead", g)
		if err != nil {
			return nil, err
		}
		out = append(out, sec)
		for _, n := range g.Nodes {
			if sec, err = one(n.ID, "boardnode", n); err != nil {
				return nil, err
			}
			out = append(out, sec)
		}
	}
	return out, nil
}

// renderFrag renders the board fragment alone, for the event stream.
func (h *Handler) renderFrag(s *board.Snapshot) ([]byte, error) {
	var b bytes.Buffer
	if err := h.pages["board"].ExecuteTemplate(&b, "boardfrag", h.newBoardFrag(s)); err != nil {
		return nil, fmt.Errorf("render board: %w", err)
	}
	return b.Bytes(), nil
}
