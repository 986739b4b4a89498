package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/aicloud/gpusuite/internal/record"
)

// scanEvents applies the job events in the spool that the agent has not
// seen and returns the names of all event files it has handled: only
// those may be shipped, so no allocation is shipped before it is
// checkpointed.
func (a *Agent) scanEvents() []string {
	handled, err := a.applySpooledEvents()
	if err != nil {
		return nil
	}
	return handled
}

// applySpooledEvents reads event files not read before, applies them
// (starts before ends, whatever the names sort as), and rolls when an
// allocation changed, so the checkpoint holds it before it can be shipped.
func (a *Agent) applySpooledEvents() ([]string, error) {
	names, err := a.spool.List()
	if err != nil {
		a.log.Warn("cannot list spool", "err", err)
		return nil, err
	}
	var events, fresh []string
	for _, n := range names {
		if record.KindOfFile(n) == record.FileEvent {
			events = append(events, n)
			if !a.eventFiles[n] {
				fresh = append(fresh, n)
			}
		}
	}
	sort.SliceStable(fresh, func(i, j int) bool {
		ki, _ := record.EventKindOfFile(fresh[i])
		kj, _ := record.EventKindOfFile(fresh[j])
		return ki == record.JobStart && kj != record.JobStart
	})
	changed := false
	for _, n := range fresh {
		data, err := os.ReadFile(filepath.Join(a.spool.Path, n))
		if err != nil {
			continue // shipped meanwhile
		}
		var ev record.Event
		if err := json.Unmarshal(data, &ev); err != nil || ev.Schema != record.EventSchema {
			a.log.Warn("spooled event unreadable; shipping it as is for ingest to judge", "file", n, "err", err)
		} else if a.applyEvent(&ev) {
			changed = true
		}
	}
	if changed || a.dirty {
		if err := a.roll(a.now()); err != nil {
			a.log.Error("cannot checkpoint after job events; events stay in the spool", "err", err)
			return nil, err
		}
	}
	keep := make(map[string]bool, len(events))
	for _, n := range events {
		keep[n] = true
	}
	a.eventFiles = keep
	return events, nil
}

// applyEvent updates the allocations; it reports whether anything changed.
func (a *Agent) applyEvent(ev *record.Event) bool {
	if ev.Key == "" || a.seen[ev.Key] != (time.Time{}) {
		return false
	}
	a.seen[ev.Key] = a.now()
	jk := jobKey(ev.Job.ID, ev.Job.RestartCount)
	switch ev.Kind {
	case record.JobStart:
		if _, done := a.ended[jk]; done {
			return true
		}
		a.eventEnergy(ev)
		al := &Alloc{Cluster: ev.Cluster, Job: ev.Job.ID, Restart: ev.Job.RestartCount, User: ev.Job.User, UID: ev.Job.UID,
			Account: ev.Job.Account, Partition: ev.Job.Partition, Start: ev.Time}
		for _, g := range ev.GPUs {
			uuid := g.UUID
			if uuid == "" {
				uuid = a.uuidOf(g)
			}
			if uuid == "" {
				a.log.Warn("allocated GPU unknown to NVML; its samples cannot be attributed", "job", ev.Job.ID, "minor", g.Minor)
				continue
			}
			al.GPUs = append(al.GPUs, AllocGPU{UUID: uuid, EnergyMJ: g.EnergyMJ})
		}
		a.allocs[jk] = al
		// aggregates start now, with the prolog's energy as baseline for
		// the first sample; one that never gets a sample is not spooled
		// (emitAggregates): the events hold its allocation
		for _, g := range al.GPUs {
			key := record.JobGPUKey(a.cluster, al.Job, al.Restart, a.node, g.UUID)
			if g0 := a.aggs[key]; g0 == nil {
				idx, model := -1, ""
				for _, d := range a.devs {
					if d.UUID == g.UUID {
						idx, model = d.Index, d.Model
					}
				}
				a.aggs[key] = newAgg(a.cluster, a.node, al.Job, al.Restart, g.UUID, idx, model, al)
			} else if g0.User == "" {
				// folded from a recovered segment before this event was read
				g0.User, g0.Account, g0.Partition = al.User, al.Account, al.Partition
			}
		}
		a.log.Info("job started", "job", ev.Job.ID, "restart", ev.Job.RestartCount, "user", ev.Job.User, "gpus", len(al.GPUs))
	case record.JobEnd:
		a.eventEnergy(ev)
		al := a.endRun(ev.Job.ID, ev.Job.RestartCount, func(g *aggState) {
			for _, id := range ev.GPUs {
				if id.UUID == g.UUID && id.EnergyMJ != nil && ev.Time.After(g.Last) {
					g.addEnergy(*id.EnergyMJ, g.LastShare) // up to the epilog's reading
				}
			}
		})
		a.log.Info("job ended", "job", ev.Job.ID, "restart", ev.Job.RestartCount, "known", al != nil)
	default:
		return false
	}
	return true
}

// endRun ends a job run: its allocation goes (and is returned, nil when
// unknown), it is remembered as ended, and each of its aggregates is
// passed to last (nil: none) and marked final. An epilog ends a run so; a
// reboot ends the runs of the boot before.
func (a *Agent) endRun(job uint64, restart int, last func(*aggState)) *Alloc {
	jk := jobKey(job, restart)
	a.ended[jk] = a.now()
	al := a.allocs[jk]
	delete(a.allocs, jk)
	for _, g := range a.aggs {
		if g.Job != job || g.RestartCount != restart {
			continue
		}
		if last != nil {
			last(g)
		}
		g.Ended = true
	}
	return al
}
