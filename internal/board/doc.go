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
	// FreeSlices are the free MIG slices per model × profile × partition
	// (Totals.FreeSlices); left out on a board without slices.
	FreeSlices []SliceCountDoc `json:"free_slices,omitempty"`
}

// SliceCountDoc is the free slices of one profile in one partition.
type SliceCountDoc struct {
	Model     string      `json:"model"`
	Profile   string      `json:"profile"`
	Partition string      `json:"partition"`
	Free      int         `json:"free"`
	Nodes     []NodeCount `json:"nodes"`
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
	// Changes are its state changes in the last hour (StatusLastHour).
	Changes []StateChangeDoc `json:"state_changes,omitempty"`
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
	// Slices are a MIG GPU's instances; LastHour its strip (StatusLastHour
	// of a long-lived board only).
	Slices   []SliceDoc `json:"slices,omitempty"`
	LastHour *StripDoc  `json:"last_hour,omitempty"`
}

// SliceDoc is one MIG instance of a GPU.
type SliceDoc struct {
	UUID        string            `json:"uuid"`
	Profile     string            `json:"profile,omitempty"`
	State       State             `json:"state"`
	Util        *uint32           `json:"util"`
	MemUsedMiB  *uint64           `json:"mem_used_mib"`
	MemTotalMiB *uint64           `json:"mem_total_mib"`
	IdleSince   string            `json:"idle_since,omitempty"`
	Jobs        []JobDoc          `json:"jobs"`
	Procs       []record.LiveProc `json:"procs"`
	LastHour    *StripDoc         `json:"last_hour,omitempty"`
}

// StripDoc is a strip: Util has one entry per minute, oldest first, the
// last ending at End (null: no snapshot, or none gave utilization); Jobs
// are the runs of minutes one job held the GPU.
type StripDoc struct {
	End  string   `json:"end"`
	Util []*uint8 `json:"util"`
	Jobs []JobRun `json:"jobs"`
}

// JobRun is a job holding a GPU for the minutes [From, To); More: another
// job held it too in one of them. Its user is the job's, not said here:
// the board's jobs name theirs, as private data allows.
type JobRun struct {
	Job  uint64 `json:"job"`
	From string `json:"from"`
	To   string `json:"to"`
	More bool   `json:"more,omitempty"`
}

// Runs are a strip's minutes cut where the job holding the GPU changes:
// Job 0 is a run no job held, Gap one without snapshots.
type Run struct {
	From, N int // minutes [From, From+N) of Minutes
	Job     uint64
	User    string
	More    bool
	Gap     bool
}

// Runs cuts s into runs; nil s has none.
func (s *Strip) Runs() []Run {
	if s == nil {
		return nil
	}
	var out []Run
	for i, m := range s.Minutes {
		gap := !m.Seen
		if l := len(out); l > 0 && out[l-1].Gap == gap && out[l-1].Job == m.Job && (gap || out[l-1].User == m.User) {
			out[l-1].N++
			out[l-1].More = out[l-1].More || m.MoreJobs
			continue
		}
		out = append(out, Run{From: i, N: 1, Job: m.Job, User: m.User, More: m.MoreJobs, Gap: gap})
	}
	return out
}

// MinuteAt is when minute i of s began.
func (s *Strip) MinuteAt(i int) time.Time {
	return s.End.Add(time.Duration(i-StripMinutes) * time.Minute)
}

func stripDoc(s *Strip) *StripDoc {
	if s == nil {
		return nil
	}
	d := &StripDoc{End: stamp(s.End), Util: make([]*uint8, StripMinutes), Jobs: []JobRun{}}
	for i := range s.Minutes {
		if m := &s.Minutes[i]; m.Seen && m.UtilKnown {
			d.Util[i] = &m.Util
		}
	}
	for _, r := range s.Runs() {
		if r.Job != 0 {
			d.Jobs = append(d.Jobs, JobRun{Job: r.Job, From: stamp(s.MinuteAt(r.From)), To: stamp(s.MinuteAt(r.From + r.N)), More: r.More})
		}
	}
	return d
}

// StateChangeDoc is a node's state change.
type StateChangeDoc struct {
	At   string `json:"at"`
	From string `json:"from"`
	To   string `json:"to"`
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
func (v *View) Status(nodes []Node) StatusDoc { return v.status(nodes, false) }

// StatusLastHour is Status with each GPU's strip and each node's state
// changes of the last hour (the web's ?last_hour=1): sixty numbers a GPU
// are asked for, not sent to every reader of the board.
func (v *View) StatusLastHour(nodes []Node) StatusDoc { return v.status(nodes, true) }

func (v *View) status(nodes []Node, lastHour bool) StatusDoc {
	b := v.Board
	out := StatusDoc{DocHead: v.head(StatusSchema), Problems: v.Meta.problemTexts(), Totals: totalsDoc(b), Nodes: make([]NodeDoc, 0, len(nodes))}
	for _, n := range nodes {
		out.Nodes = append(out.Nodes, nodeDoc(n, b.At, v.Meta, lastHour))
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
	for _, sc := range b.Totals.FreeSlices {
		t.FreeSlices = append(t.FreeSlices, SliceCountDoc{Model: sc.Model, Profile: sc.Profile, Partition: sc.Partition,
			Free: sc.Free, Nodes: append([]NodeCount(nil), sc.Nodes...)})
	}
	return t
}

func nodeDoc(n Node, at time.Time, m Meta, lastHour bool) NodeDoc {
	d := NodeDoc{Name: n.Name, Cluster: n.Cluster, Condition: string(n.Condition), NotResponding: n.NotResponding,
		Reason: n.Reason, Partitions: orEmpty(n.Partitions), Reservations: orEmpty(n.Reservations), InSlurm: n.InSlurm,
		Stale: n.Stale, SnapshotAt: stamp(n.SnapshotAt), Notes: noteDocs(n.Notes), GPUs: []GPUDoc{}}
	for _, g := range n.GPUs {
		gd := GPUDoc{Index: g.Index, UUID: g.UUID, Model: g.Model, State: g.State, Util: g.Util,
			MemUsedMiB: g.MemUsedMiB, MemTotalMiB: g.MemTotalMiB, TempC: g.TempC,
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
		gd.Jobs = jobDocs(g.Jobs, at, m)
		if lastHour {
			gd.LastHour = stripDoc(g.Strip)
		}
		for _, sl := range g.Slices {
			sd := SliceDoc{UUID: sl.UUID, Profile: sl.Profile, State: sl.State, Util: sl.Util, MemUsedMiB: sl.MemUsedMiB,
				MemTotalMiB: sl.MemTotalMiB, Jobs: jobDocs(sl.Jobs, at, m), Procs: sl.Procs}
			if lastHour {
				sd.LastHour = stripDoc(sl.Strip)
			}
			if sl.IdleSince != nil {
				sd.IdleSince = stamp(*sl.IdleSince)
			}
			if sd.Procs == nil {
				sd.Procs = []record.LiveProc{}
			}
			gd.Slices = append(gd.Slices, sd)
		}
		d.GPUs = append(d.GPUs, gd)
	}
	for _, c := range n.Changes {
		if lastHour {
			d.Changes = append(d.Changes, StateChangeDoc{At: stamp(c.At), From: c.From, To: c.To})
		}
	}
	return d
}

func jobDocs(jobs []record.LiveJob, at time.Time, m Meta) []JobDoc {
	out := make([]JobDoc, 0, len(jobs))
	for _, j := range jobs {
		jd := JobDoc{Job: j.Job, Restart: j.Restart, User: j.User, Account: j.Account, Team: m.team(j.Account, j.User), Start: stamp(j.Start)}
		if !j.Start.IsZero() && !at.Before(j.Start) {
			e := int64(at.Sub(j.Start) / time.Second)
			jd.ElapsedS = &e
		}
		out = append(out, jd)
	}
	return out
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
