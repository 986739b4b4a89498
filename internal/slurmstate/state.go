// Package slurmstate reads Slurm's own view of the cluster for the live
// board: node states with drain reasons, partitions, GPUs from GRES, and
// reservations. The parsers take scontrol's text and run nothing, so they
// are tested on plain fixtures; Reader runs scontrol inside a deadline.
// WriteFile and ReadFile keep a view in a file (file.go) for readers that
// cannot ask the Slurm that made it: the demo's simulated one. Queue
// (queue.go) sums squeue's pending jobs that ask for GPUs.
package slurmstate

import "time"

// Condition is a node's state as the board shows it, following sinfo's
// naming: a drained node with jobs still on it is draining.
type Condition string

// The conditions a node can be in. Any other base state of Slurm's
// (error, future, unknown, ...) is kept lower-cased.
const (
	Idle      Condition = "idle"
	Mixed     Condition = "mixed"
	Allocated Condition = "allocated"
	Draining  Condition = "draining"
	Drained   Condition = "drained"
	Down      Condition = "down"
)

// Node is one line of `scontrol show node --oneliner`.
type Node struct {
	Name string
	// State is scontrol's text (IDLE+DRAIN); Base its first word, Flags
	// the rest (DRAIN, NOT_RESPONDING, COMPLETING, ...).
	State     string
	Base      string
	Flags     []string
	Condition Condition
	// NotResponding: slurmctld has not heard from slurmd (sinfo's "*").
	NotResponding bool
	// Reason is the admin's or Slurm's text without the trailing
	// [user@time]; ReasonUser and ReasonTime are that bracket's parts.
	Reason     string
	ReasonUser string
	ReasonTime time.Time
	Partitions []string
	CPUs       int
	CPUsAlloc  int
	// GPUs is one entry per GPU type in Gres (Type empty when untyped).
	GPUs []GPU
	// GPUCount and GPUsUsed are the node's totals.
	GPUCount int
	GPUsUsed int
}

// GPU is one GPU type on a node.
type GPU struct {
	Type  string
	Count int
	// Used is how many of this type jobs hold, -1 when Slurm said only
	// the node's total (an untyped gres/gpu in AllocTRES).
	Used int
}

// Reservation is one line of `scontrol show reservation --oneliner`.
type Reservation struct {
	Name string
	// Start and End are zero when scontrol says Unknown, None or N/A.
	Start, End time.Time
	// NodeList is Slurm's hostlist expression; Nodes its expansion.
	NodeList  string
	Nodes     []string
	Partition string
	Users     []string
	Accounts  []string
	Flags     []string
	State     string
}

// State is Slurm's view at one moment.
type State struct {
	Nodes        []Node
	Reservations []Reservation
	At           time.Time
}
