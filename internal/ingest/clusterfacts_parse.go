package ingest

import (
	"fmt"
	"iter"
	"strconv"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/slurmstate"
	"github.com/aicloud/gpusuite/internal/store"
)

// The sacctmgr formats the parsers below read. The free text (an
// outage's reason, a reservation's name) comes last: sacctmgr -P does
// not escape '|' inside it, so it is the rest of the line.
const (
	eventFormat = "Cluster,NodeName,Start,End,StateRaw,TRES,Reason"
	resvFormat  = "Cluster,ID,Start,End,Flags,NodeNames,TRES,Name"
)

// pipeFields yields the n fields of each line of out, sacctmgr's -P
// output; a blank line is passed over, one of another number of fields
// counted in skipped.
func pipeFields(out string, n int, skipped *int) iter.Seq[[]string] {
	return func(yield func([]string) bool) {
		for line := range strings.SplitSeq(out, "\n") {
			line = strings.TrimRight(line, "\r")
			if strings.TrimSpace(line) == "" {
				continue
			}
			f := strings.SplitN(line, "|", n)
			if len(f) != n {
				*skipped++
				continue
			}
			if !yield(f) {
				return
			}
		}
	}
}

// parseSlurmEvents reads `sacctmgr -P -n show event format=eventFormat`
// lines, times in loc. A line that does not parse is counted in skipped,
// not stored: one bad line must not hide the cluster's capacity.
func parseSlurmEvents(out string, loc *time.Location) (events []store.SlurmEvent, skipped int, err error) {
	for f := range pipeFields(out, 7, &skipped) {
		start, err1 := sacctTime(f[2], loc)
		end, err2 := sacctTime(f[3], loc)
		state, err3 := strconv.ParseUint(strings.TrimSpace(f[4]), 10, 32)
		if err1 != nil || err2 != nil || err3 != nil || start.IsZero() || strings.TrimSpace(f[0]) == "" ||
			(!end.IsZero() && end.Before(start)) {
			skipped++
			continue
		}
		e := store.SlurmEvent{Cluster: strings.TrimSpace(f[0]), Node: strings.TrimSpace(f[1]), Start: start.Unix(),
			State: uint32(state), GPUs: tresGPUs(f[5]), Reason: strings.TrimSpace(f[6])}
		if !end.IsZero() {
			e.End = end.Unix()
		}
		if len(events) == store.MaxClusterFacts {
			return nil, skipped, fmt.Errorf("sacctmgr listed more than %d events", store.MaxClusterFacts)
		}
		events = append(events, e)
	}
	return events, skipped, nil
}

// parseSlurmReservations reads `sacctmgr -P -n show reservation
// format=resvFormat` lines, times in loc.
func parseSlurmReservations(out string, loc *time.Location) (rs []store.SlurmReservation, skipped int, err error) {
	for f := range pipeFields(out, 8, &skipped) {
		id, err1 := strconv.ParseInt(strings.TrimSpace(f[1]), 10, 64)
		start, err2 := sacctTime(f[2], loc)
		end, err3 := sacctTime(f[3], loc)
		// A hostlist report cluster could not expand is refused here, so
		// that one bad line cannot fail every report over its time.
		_, err4 := slurmstate.ExpandHostlist(strings.TrimSpace(f[5]), maxResvNodes)
		if err1 != nil || err2 != nil || err3 != nil || err4 != nil || start.IsZero() || end.IsZero() || end.Before(start) ||
			strings.TrimSpace(f[0]) == "" {
			skipped++
			continue
		}
		if len(rs) == store.MaxClusterFacts {
			return nil, skipped, fmt.Errorf("sacctmgr listed more than %d reservations", store.MaxClusterFacts)
		}
		rs = append(rs, store.SlurmReservation{Cluster: strings.TrimSpace(f[0]), ID: id, Start: start.Unix(), End: end.Unix(),
			Flags: strings.TrimSpace(f[4]), Nodes: strings.TrimSpace(f[5]), GPUs: tresGPUs(f[6]), Name: strings.TrimSpace(f[7])})
	}
	return rs, skipped, nil
}

// tresGPUs is the gres/gpu count of a TRES string as sacctmgr prints it
// ("cpu=64,mem=500G,node=1,billing=64,gres/gpu=8"): the untyped count,
// which is what sreport -T gres/gpu reads; typed counts
// (gres/gpu:a100=8) are the same GPUs again.
func tresGPUs(tres string) int64 {
	for kv := range strings.SplitSeq(tres, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k != "gres/gpu" {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0
		}
		return n
	}
	return 0
}
