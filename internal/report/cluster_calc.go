package report

import (
	"cmp"
	"slices"
	"strings"

	"github.com/aicloud/gpusuite/internal/store"
)

// Slurm's node state bits that decide where an outage counts (slurm.h).
const (
	nodeStateBase        = 0x0000000f
	nodeStateFuture      = 6
	nodeStatePoweredDown = 0x00001000
	nodeStateMaint       = 0x00008000
)

// Utilization is sreport's cluster utilization in GPU-seconds over some
// hours, with what gpuacct adds: Reserved, the part of Allocated that
// reservations held and no job used.
type Utilization struct {
	// Allocated is GPU-time allocated to jobs, and to reservations in
	// full (as sreport counts them, used or not).
	Allocated int64
	// Down is GPU-time of nodes down or drained (and of a slurmctld that
	// did not answer); PlannedDown of nodes powered down or not yet
	// there (FUTURE) and of maintenance reservations.
	Down, PlannedDown int64
	// Idle is capacity nobody held: Reported − Allocated − Down −
	// PlannedDown − Planned.
	Idle int64
	// Planned is sreport's time pending jobs waited while they could
	// run; Slurm counts it for CPUs only, so for GPUs it is 0.
	Planned int64
	// Reported is the capacity: the cluster's GPUs over the time.
	Reported int64
	// Reserved is the part of Allocated that reservations held while no
	// job ran in them.
	Reserved int64
}

func (u *Utilization) add(v Utilization) {
	u.Allocated += v.Allocated
	u.Down += v.Down
	u.PlannedDown += v.PlannedDown
	u.Idle += v.Idle
	u.Planned += v.Planned
	u.Reported += v.Reported
	u.Reserved += v.Reserved
}

// resv is a reservation with its nodes expanded.
type resv struct {
	store.SlurmReservation
	nodes map[string]bool
	// nodeList is nodes in the hostlist's order, each once: the names to
	// read its job parts by.
	nodeList          []string
	maint, ignoreJobs bool
	// spans are the job parts on its nodes during it.
	spans []store.JobPart
}

func newResv(r store.SlurmReservation, nodes []string) resv {
	x := resv{SlurmReservation: r, nodes: make(map[string]bool, len(nodes))}
	for _, n := range nodes {
		if !x.nodes[n] {
			x.nodes[n] = true
			x.nodeList = append(x.nodeList, n)
		}
	}
	for f := range strings.SplitSeq(r.Flags, ",") {
		switch strings.ToUpper(strings.TrimSpace(f)) {
		case "MAINT":
			x.maint = true
		case "IGNORE_JOBS":
			x.ignoreJobs = true
		}
	}
	return x
}

// clusterFacts are one cluster's facts for hourUtil.
type clusterFacts struct {
	events []store.SlurmEvent
	resvs  []resv
	// alloc is job GPU-seconds per hour (Unix seconds).
	alloc map[int64]int64
}

// factSweep hands hourUtil, hour after hour, only the events and
// reservations that meet the hour: sorted by start, they join when the
// hour reaches them and leave once they ended, so a long window costs
// the facts in effect each hour, not all of them every hour.
type factSweep struct {
	f            *clusterFacts
	nextE, nextR int
	cur          clusterFacts
}

func newFactSweep(f *clusterFacts) *factSweep {
	// Stable: among reservations of the same start, the store's order
	// (by id) is kept, which the rollup's "last reservation" rule needs.
	slices.SortStableFunc(f.events, func(a, b store.SlurmEvent) int { return cmp.Compare(a.Start, b.Start) })
	slices.SortStableFunc(f.resvs, func(a, b resv) int { return cmp.Compare(a.Start, b.Start) })
	return &factSweep{f: f, cur: clusterFacts{alloc: f.alloc}}
}

// at is the facts that meet [h0, h1); hours must come in increasing order.
func (s *factSweep) at(h0, h1 int64) *clusterFacts {
	s.cur.events = slices.DeleteFunc(s.cur.events, func(e store.SlurmEvent) bool { return e.End != 0 && e.End <= h0 })
	s.cur.resvs = slices.DeleteFunc(s.cur.resvs, func(r resv) bool { return r.End <= h0 })
	for ; s.nextE < len(s.f.events) && s.f.events[s.nextE].Start < h1; s.nextE++ {
		if e := s.f.events[s.nextE]; e.End == 0 || e.End > h0 {
			s.cur.events = append(s.cur.events, e)
		}
	}
	for ; s.nextR < len(s.f.resvs) && s.f.resvs[s.nextR].Start < h1; s.nextR++ {
		if r := s.f.resvs[s.nextR]; r.End > h0 {
			s.cur.resvs = append(s.cur.resvs, r)
		}
	}
	return &s.cur
}

func overlap(s1, e1, s2, e2 int64) int64 {
	return min(e1, e2) - max(s1, s2)
}

// hourUtil is the utilization of the hour [h0, h1) as slurmdbd's hourly
// rollup computes it for gres/gpu (as_mysql_rollup.c), from Slurm's
// events and reservations and the ledger's allocations:
//
//   - capacity is the cluster rows' GPUs × their seconds in the hour; an
//     hour with none counts nothing (the cluster was not registered);
//   - an outage of a node (not flagged MAINT) counts its GPUs × seconds
//     as down, planned down when the node was FUTURE or powered down, and
//     where it overlaps a reservation on that node as down (planned down
//     for a maintenance reservation), taken from the reservation's time;
//   - a reservation (without IGNORE_JOBS) counts in full as allocated,
//     or planned down for MAINT; jobs in it do not count again;
//   - other jobs count as allocated;
//   - allocated is capped at capacity, then down and planned down are
//     cut so that the three fit, and idle is the rest.
//
// Jobs in a reservation are those on its nodes during it: the ledger
// does not record the reservation a job ran in.
func hourUtil(f *clusterFacts, h0, h1 int64) Utilization {
	var u Utilization
	var total, cStart, cEnd int64
	var ctldDown int64
	have := false
	for _, e := range f.events {
		if e.Node != "" {
			continue
		}
		end := e.End
		if end == 0 || end > h1 {
			end = h1
		}
		start := max(e.Start, h0)
		secs := end - start
		if secs < 1 {
			continue
		}
		if e.State != 0 {
			ctldDown += e.GPUs * secs
			continue
		}
		if !have {
			cStart, have = start, true
		}
		cStart, cEnd = min(cStart, start), max(cEnd, end)
		total += e.GPUs * secs
	}
	if !have {
		return u
	}
	// Reservations' GPU-time in the hour, before outages are taken out.
	resvTime := make([]int64, len(f.resvs))
	for i, r := range f.resvs {
		if s := overlap(r.Start, r.End, h0, h1); s >= 1 {
			resvTime[i] = r.GPUs * s
		}
	}
	var down, pdown int64
	for _, e := range f.events {
		if e.Node == "" || e.State&nodeStateMaint != 0 {
			continue
		}
		rowStart, rowEnd := max(e.Start, h0), e.End
		if rowEnd == 0 || rowEnd > h1 {
			rowEnd = h1
		}
		if rowEnd-rowStart < 1 {
			continue
		}
		// As the rollup does, the seconds of the last reservation on the
		// node in the hour are those taken off the plain outage below,
		// even when that reservation and the outage do not meet: a
		// negative overlap then adds to the outage. slurmdbd's
		// _setup_cluster_usage (as_mysql_rollup.c) assigns resv_seconds =
		// temp_end - temp_start for each reservation on the node before
		// its "< 1: continue", and after the loop does seconds -=
		// resv_seconds; TestHourUtil's "outage before a reservation"
		// holds the result.
		var resvSecs int64
		for i, r := range f.resvs {
			if !r.nodes[e.Node] || overlap(r.Start, r.End, h0, h1) < 1 {
				continue
			}
			resvSecs = overlap(rowStart, rowEnd, max(r.Start, h0), min(r.End, h1))
			if resvSecs < 1 {
				continue
			}
			if r.maint {
				pdown += e.GPUs * resvSecs
			} else {
				down += e.GPUs * resvSecs
			}
			resvTime[i] = max(0, resvTime[i]-e.GPUs*resvSecs)
		}
		secs := min(rowEnd, cEnd) - max(rowStart, cStart)
		if secs < 1 {
			continue
		}
		if secs -= resvSecs; secs > 0 {
			if e.State&nodeStateBase == nodeStateFuture || e.State&nodeStatePoweredDown != 0 {
				pdown += e.GPUs * secs
			} else {
				down += e.GPUs * secs
			}
		}
	}
	alloc := f.alloc[h0]
	var reserved int64
	for i, r := range f.resvs {
		if r.ignoreJobs || overlap(r.Start, r.End, h0, h1) < 1 {
			continue
		}
		inside := r.jobsIn(h0, h1)
		alloc -= inside
		if r.maint {
			pdown += resvTime[i]
		} else {
			alloc += resvTime[i]
			reserved += max(0, resvTime[i]-inside)
		}
	}
	down += ctldDown
	alloc = max(0, min(alloc, total))
	if over := total - (alloc + down); over < 0 {
		down = max(0, down+over)
	}
	if over := total - (alloc + down + pdown); over < 0 {
		pdown = max(0, pdown+over)
	}
	u = Utilization{Allocated: alloc, Down: down, PlannedDown: pdown, Reported: total, Reserved: min(reserved, alloc)}
	u.Idle = max(0, total-alloc-down-pdown-u.Planned)
	return u
}

// jobsIn is the GPU-time jobs held on r's nodes during r in [h0, h1).
func (r *resv) jobsIn(h0, h1 int64) int64 {
	var sum int64
	s0, e0 := max(r.Start, h0), min(r.End, h1)
	for _, sp := range r.spans {
		end := sp.End
		if end == 0 {
			end = h1
		}
		if s := overlap(sp.Start, end, s0, e0); s > 0 {
			sum += sp.GPUs * s
		}
	}
	return sum
}
