package board

import (
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// The JSON documents of the board, rendered from its View: gpuacct status
// and free --format json print them, and the web API serves the same
// (docs/api.md), so a script reads one shape wherever it asks. Times are
// RFC 3339 in UTC.

// Schemas of the documents.
const (
	StatusSchema = "gpusuite.status/v1"
	FreeSchema   = "gpusuite.free/v1"
	NotesSchema  = "gpusuite.notes/v1"
)

// Meta is how a board was had.
type Meta struct {
	// SlurmError is why Slurm's view is missing; "" when had or not asked.
	SlurmError string
	Problems   []Problem
	// Team maps a job's account and user to its team (a mapping file may
	// name users as well as accounts); nil: the account itself.
	Team func(account, user string) string
}

func (m Meta) team(account, user string) string {
	if m.Team == nil || account == "" {
		return account
	}
	return m.Team(account, user)
}

func (m Meta) problemTexts() []string {
	out := []string{}
	for _, p := range m.Problems {
		out = append(out, p.String())
	}
	return out
}

// DocHead opens the status and free documents: which document, the
// board's time and how Slurm's view was had. The free document leaves
// SlurmAt out.
type DocHead struct {
	Schema     string `json:"schema"`
	At         string `json:"at"`
	Slurm      bool   `json:"slurm"`
	SlurmAt    string `json:"slurm_at,omitempty"`
	SlurmError string `json:"slurm_error,omitempty"`
}

func (v *View) head(schema string) DocHead {
	return DocHead{Schema: schema, At: stamp(v.Board.At), Slurm: v.Board.Slurm, SlurmAt: stamp(v.Board.SlurmAt),
		SlurmError: v.Meta.SlurmError}
}

// StatusDoc is the whole board (gpusuite.status/v1).
type StatusDoc struct {
	DocHead
	Problems []string  `json:"problems"`
	Totals   TotalsDoc `json:"totals"`
	Nodes    []NodeDoc `json:"nodes"`
}

// TotalsDoc are the board's sums.
type TotalsDoc struct {
	// Free is Totals.FreeGPUs (IsFree); FreeReserved the reserved GPUs,
	// free to a reservation's users only and not counted in Free.
	Free          int `json:"free"`
	FreeReserved  int `json:"free_reserved"`
	Booked        int `json:"booked"`
	IdleAllocated int `json:"idle_allocated"`
	RunningJobs   int `json:"running_jobs"`
	StaleNodes    int `json:"stale_nodes"`
	// States counts every GPU by its state.
	States map[State]int `json:"states"`
}

// NodeDoc is one node.
type NodeDoc struct {
	Name          string    `json:"name"`
	Cluster       string    `json:"cluster,omitempty"`
	Condition     string    `json:"condition,omitempty"`
	NotResponding bool      `json:"not_responding,omitempty"`
	Reason        string    `json:"reason,omitempty"`
	Partitions    []string  `json:"partitions"`
	Reservations  []string  `json:"reservations"`
	InSlurm       bool      `json:"in_slurm"`
	Stale         bool      `json:"stale"`
	SnapshotAt    string    `json:"snapshot_at,omitempty"`
	Notes         []NoteDoc `json:"notes"`
	GPUs          []GPUDoc  `json:"gpus"`
}

// GPUDoc is one GPU.
type GPUDoc struct {
	Index       int               `json:"index"`
	UUID        string            `json:"uuid,omitempty"`
	Model       string            `json:"model,omitempty"`
	State       State             `json:"state"`
	Util        *uint32           `json:"util"`
	MemUsedMiB  *uint64           `json:"mem_used_mib"`
	MemTotalMiB *uint64           `json:"mem_total_mib"`
	PowerW      *float64          `json:"power_w"`
	TempC       *uint32           `json:"temp_c"`
	IdleSince   string            `json:"idle_since,omitempty"`
	Jobs        []JobDoc          `json:"jobs"`
	Procs       []record.LiveProc `json:"procs"`
	Notes       []NoteDoc         `json:"notes"`
}

// JobDoc is a job holding a GPU.
type JobDoc struct {
	Job     uint64 `json:"job"`
	Restart int    `json:"restart"`
	User    string `json:"user,omitempty"`
	Account string `json:"account,omitempty"`
	Team    string `json:"team,omitempty"`
	Start   string `json:"start,omitempty"`
	// ElapsedS is seconds since Start at the board's time.
	ElapsedS *int64 `json:"elapsed_s,omitempty"`
}

// NoteDoc is a note in force. Node, Cluster, Created, RemovedAt and
// RemovedBy are set in the notes document only: on a node of the status
// document the node is said already.
type NoteDoc struct {
	ID        int64  `json:"id"`
	Node      string `json:"node,omitempty"`
	Cluster   string `json:"cluster,omitempty"`
	GPU       *int   `json:"gpu"`
	Until     string `json:"until"`
	Text      string `json:"text"`
	Author    string `json:"author"`
	Created   string `json:"created,omitempty"`
	RemovedAt string `json:"removed_at,omitempty"`
	RemovedBy string `json:"removed_by,omitempty"`
	// Status and Error are set by a list that shows the requests not yet
	// applied or refused beside the notes (gpuacct note list): active,
	// expired, removed, pending or refused, and why refused. ID is 0 for
	// a note not yet added.
	Status string `json:"status,omitempty"`
	Error  string `json:"error,omitempty"`
}

// Status is the status document of nodes (all of the board's, or those
// chosen).
func (v *View) Status(nodes []Node) StatusDoc {
	b := v.Board
	out := StatusDoc{DocHead: v.head(StatusSchema), Problems: v.Meta.problemTexts(), Totals: totalsDoc(b), Nodes: []NodeDoc{}}
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, nodeDoc(n, b.At, v.Meta))
	}
	return out
}

func totalsDoc(b *Board) TotalsDoc {
	t := TotalsDoc{Free: b.Totals.FreeGPUs, FreeReserved: b.Totals.ReservedGPUs, Booked: b.Totals.Booked,
		IdleAllocated: b.Totals.IdleAllocated, RunningJobs: b.Totals.RunningJobs, StaleNodes: b.Totals.StaleNodes,
		States: map[State]int{}}
	for _, n := range b.Nodes {
		for _, g := range n.GPUs {
			t.States[g.State]++
		}
	}
	return t
}

func nodeDoc(n Node, at time.Time, m Meta) NodeDoc {
	d := NodeDoc{Name: n.Name, Cluster: n.Cluster, Condition: string(n.Condition), NotResponding: n.NotResponding,
		Reason: n.Reason, Partitions: orEmpty(n.Partitions), Reservations: orEmpty(n.Reservations), InSlurm: n.InSlurm,
		Stale: n.Stale, SnapshotAt: stamp(n.SnapshotAt), Notes: noteDocs(n.Notes), GPUs: []GPUDoc{}}
	for _, g := range n.GPUs {
		gd := GPUDoc{Index: g.Index, UUID: g.UUID, Model: g.Model, State: g.State, Util: g.Util,
			MemUsedMiB: g.MemUsedMiB, MemTotalMiB: g.MemTotalMiB, TempC: g.TempC, Jobs: []JobDoc{},
			Procs: g.Procs, Notes: noteDocs(g.Notes)}
		if g.PowerMW != nil {
			w := float64(*g.PowerMW) / 1000
			gd.PowerW = &w
		}
		if g.IdleSince != nil {
			gd.IdleSince = stamp(*g.IdleSince)
		}
		if gd.Procs == nil {
			gd.Procs = []record.LiveProc{}
		}
		for _, j := range g.Jobs {
			jd := JobDoc{Job: j.Job, Restart: j.Restart, User: j.User, Account: j.Account, Team: m.team(j.Account, j.User), Start: stamp(j.Start)}
			if !j.Start.IsZero() && !at.Before(j.Start) {
				e := int64(at.Sub(j.Start) / time.Second)
				jd.ElapsedS = &e
			}
			gd.Jobs = append(gd.Jobs, jd)
		}
		d.GPUs = append(d.GPUs, gd)
	}
	return d
}

func noteDocs(notes []Note) []NoteDoc {
	out := []NoteDoc{}
	for _, n := range notes {
		out = append(out, NoteDoc{ID: n.ID, GPU: n.GPU, Until: stamp(n.Until), Text: n.Text, Author: n.Author})
	}
	return out
}

// FreeDoc is where GPUs are free (gpusuite.free/v1).
type FreeDoc struct {
	DocHead
	StaleNodes    []string `json:"stale_nodes"`
	Problems      []string `json:"problems"`
	IdleAllocated int      `json:"idle_allocated"`
	Booked        int      `json:"booked"`
	RunningJobs   int      `json:"running_jobs"`
	// FreeTotal and ReservedTotal count each GPU once (Totals.FreeGPUs,
	// ReservedGPUs), where Free's entries count a node in two partitions
	// in both.
	FreeTotal     int         `json:"free_total"`
	ReservedTotal int         `json:"reserved_total"`
	Free          []FreeEntry `json:"free"`
}

// FreeEntry is the free GPUs of one model in one partition.
type FreeEntry struct {
	Model     string      `json:"model"`
	Partition string      `json:"partition"`
	Free      int         `json:"free"`
	Reserved  int         `json:"reserved"`
	Nodes     []NodeCount `json:"nodes"`
}

// Free is the free document.
func (v *View) Free() FreeDoc {
	b := v.Board
	out := FreeDoc{DocHead: v.head(FreeSchema), StaleNodes: append([]string{}, v.Stale...), Problems: v.Meta.problemTexts(),
		IdleAllocated: b.Totals.IdleAllocated, Booked: b.Totals.Booked, RunningJobs: b.Totals.RunningJobs,
		FreeTotal: b.Totals.FreeGPUs, ReservedTotal: b.Totals.ReservedGPUs, Free: []FreeEntry{}}
	out.SlurmAt = ""
	for _, f := range b.Totals.Free {
		out.Free = append(out.Free, FreeEntry{Model: f.Model, Partition: f.Partition, Free: f.Free, Reserved: f.Reserved,
			Nodes: append([]NodeCount(nil), f.Nodes...)})
	}
	return out
}

// NotesDoc is a list of notes (gpusuite.notes/v1): those in force at At,
// or with All every note kept, removed and expired ones too.
type NotesDoc struct {
	Schema string    `json:"schema"`
	At     string    `json:"at"`
	All    bool      `json:"all"`
	Notes  []NoteDoc `json:"notes"`
}

// ListedNote is a note with what a list of notes says beside it.
type ListedNote struct {
	Note
	Cluster   string
	Created   time.Time
	RemovedAt *time.Time
	RemovedBy string
	// Status and Error: NoteDoc's; "" leaves them out.
	Status string
	Error  string
}

// NewNotesDoc is the notes document of notes, in their order.
func NewNotesDoc(at time.Time, all bool, notes []ListedNote) NotesDoc {
	out := NotesDoc{Schema: NotesSchema, At: stamp(at), All: all, Notes: []NoteDoc{}}
	for _, n := range notes {
		d := NoteDoc{ID: n.ID, Node: n.Node, Cluster: n.Cluster, GPU: n.GPU, Until: stamp(n.Until), Text: n.Text,
			Author: n.Author, Created: stamp(n.Created), RemovedBy: n.RemovedBy, Status: n.Status, Error: n.Error}
		if d.Cluster == "" {
			d.Cluster = n.Note.Cluster // the Note's own, as ListedNoteOf fills it
		}
		if n.RemovedAt != nil {
			d.RemovedAt = stamp(*n.RemovedAt)
		}
		out.Notes = append(out.Notes, d)
	}
	return out
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
