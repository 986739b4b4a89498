package slurmstate

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// ParseNodes reads `scontrol show node --oneliner` (several nodes, one a
// line; the multi-line form works too). Reason times are read in loc
// (time.Local when nil), slurmctld's zone.
func ParseNodes(out []byte, loc *time.Location) ([]Node, error) {
	if loc == nil {
		loc = time.Local
	}
	recs, err := records(out)
	if err != nil {
		return nil, fmt.Errorf("parse scontrol show node: %w", err)
	}
	nodes := make([]Node, 0, len(recs))
	for _, r := range recs {
		n, err := parseNode(r, loc)
		if err != nil {
			return nil, fmt.Errorf("parse scontrol show node: line %d: %w", r.line, err)
		}
		nodes = append(nodes, n)
	}
	return nodes, nil
}

func parseNode(r record, loc *time.Location) (Node, error) {
	f := r.fields
	if r.first != "NodeName" || f["NodeName"] == "" {
		return Node{}, fmt.Errorf("record starts with %s=, want NodeName=: is this scontrol show node output?", clip(r.first))
	}
	n := Node{Name: f["NodeName"], State: f["State"], Partitions: list(f["Partitions"])}
	if n.State == "" {
		return Node{}, fmt.Errorf("node %s has no State=", clip(n.Name))
	}
	states := strings.Split(n.State, "+")
	n.Base = states[0]
	if len(states) > 1 {
		n.Flags = states[1:]
	}
	n.Condition, n.NotResponding = condition(n.Base, n.Flags)
	var err error
	if n.Reason, n.ReasonUser, n.ReasonTime, err = parseReason(f["Reason"], loc); err != nil {
		return Node{}, fmt.Errorf("node %s: %w", clip(n.Name), err)
	}
	for _, k := range []struct {
		key string
		to  *int
	}{{"CPUTot", &n.CPUs}, {"CPUAlloc", &n.CPUsAlloc}} {
		if v, ok := f[k.key]; ok {
			if *k.to, err = strconv.Atoi(v); err != nil || *k.to < 0 {
				return Node{}, fmt.Errorf("node %s: %s=%q is not a count", clip(n.Name), k.key, clip(v))
			}
		}
	}
	if err := n.readGPUs(f); err != nil {
		return Node{}, fmt.Errorf("node %s: %w", clip(n.Name), err)
	}
	return n, nil
}

// condition names the state as sinfo does: DRAIN with jobs on the node
// (ALLOCATED, MIXED, COMPLETING) is draining, without them drained.
func condition(base string, flags []string) (Condition, bool) {
	has := map[string]bool{}
	for _, f := range flags {
		has[f] = true
	}
	switch {
	case base == "DRAINING":
		return Draining, has["NOT_RESPONDING"]
	case base == "DRAINED":
		return Drained, has["NOT_RESPONDING"]
	case has["DRAIN"] && (base == "ALLOCATED" || base == "MIXED" || has["COMPLETING"]):
		return Draining, has["NOT_RESPONDING"]
	case has["DRAIN"]:
		return Drained, has["NOT_RESPONDING"]
	}
	switch base {
	case "IDLE":
		return Idle, has["NOT_RESPONDING"]
	case "MIXED":
		return Mixed, has["NOT_RESPONDING"]
	case "ALLOCATED":
		return Allocated, has["NOT_RESPONDING"]
	case "DOWN":
		return Down, has["NOT_RESPONDING"]
	}
	return Condition(strings.ToLower(base)), has["NOT_RESPONDING"]
}

// parseReason splits "board test [root@2026-11-26T05:50:00]".
func parseReason(s string, loc *time.Location) (reason, user string, at time.Time, err error) {
	if s == "" || s == "(null)" || s == "none" {
		return "", "", time.Time{}, nil
	}
	open := strings.LastIndex(s, " [")
	if open < 0 || !strings.HasSuffix(s, "]") {
		return s, "", time.Time{}, nil
	}
	user, when, ok := strings.Cut(s[open+2:len(s)-1], "@")
	if !ok {
		return s, "", time.Time{}, nil
	}
	if at, err = parseTime(when, loc); err != nil {
		return "", "", time.Time{}, fmt.Errorf("reason %q: %w", clip(s), err)
	}
	return s[:open], user, at, nil
}

// readGPUs takes the GPUs from Gres (gpu:h100:8(S:0-1), gpu:4), or from
// CfgTRES when Gres lists none, and their use from GresUsed, or from
// AllocTRES (gres/gpu=2, gres/gpu:h100=2) when GresUsed is absent.
func (n *Node) readGPUs(f map[string]string) error {
	total, err := gresGPUs(f["Gres"])
	if err != nil {
		return fmt.Errorf("Gres: %w", err)
	}
	if len(total) == 0 {
		if total, err = tresGPUs(f["CfgTRES"]); err != nil {
			return fmt.Errorf("CfgTRES: %w", err)
		}
	}
	var used []GPU
	if v, ok := f["GresUsed"]; ok {
		used, err = gresGPUs(v)
		if err != nil {
			return fmt.Errorf("GresUsed: %w", err)
		}
	} else if used, err = tresGPUs(f["AllocTRES"]); err != nil {
		return fmt.Errorf("AllocTRES: %w", err)
	}
	// Typed use says each type's share; an untyped total says only the
	// node's, which belongs to a type only when the node has one.
	usedOf, typed, untyped := map[string]int{}, false, 0
	for _, u := range used {
		if u.Type == "" {
			untyped += u.Count
			continue
		}
		typed = true
		usedOf[u.Type] += u.Count
	}
	usedTotal := untyped
	if typed {
		usedTotal = 0
		for _, c := range usedOf {
			usedTotal += c
		}
	}
	for _, g := range total {
		switch {
		case typed:
			g.Used = usedOf[g.Type]
		case len(total) == 1:
			g.Used = usedTotal
		default:
			g.Used = -1
		}
		n.GPUs = append(n.GPUs, g)
		n.GPUCount += g.Count
	}
	n.GPUsUsed = usedTotal
	return nil
}

// maxGPUsPerNode bounds a count from text: no node holds more.
const maxGPUsPerNode = 1 << 16

// gresGPUs reads the gpu entries of a GRES list: gpu:h100:8(S:0-1),
// gpu:4, gpu:a100 (one), gpu:h100:3(IDX:0-2); other GRES are skipped.
// Typed entries merge by type.
func gresGPUs(s string) ([]GPU, error) {
	if s == "" || s == "(null)" {
		return nil, nil
	}
	var out []GPU
	for _, e := range splitTop(s) {
		if i := strings.IndexByte(e, '('); i >= 0 {
			if !strings.HasSuffix(e, ")") {
				return nil, fmt.Errorf("entry %q has an unclosed '('", clip(e))
			}
			e = e[:i]
		}
		parts := strings.Split(e, ":")
		if parts[0] != "gpu" {
			continue
		}
		g := GPU{Count: 1}
		switch len(parts) {
		case 1:
		case 2:
			if c, err := gresCount(parts[1]); err == nil {
				g.Count = c
			} else {
				g.Type = parts[1]
			}
		case 3:
			c, err := gresCount(parts[2])
			if err != nil {
				return nil, fmt.Errorf("entry %q: %w", clip(e), err)
			}
			g.Type, g.Count = parts[1], c
		default:
			return nil, fmt.Errorf("entry %q is not gpu[:type][:count]", clip(e))
		}
		out = addGPU(out, g)
	}
	return out, nil
}

// tresGPUs reads gres/gpu=N and gres/gpu:type=N from a TRES list. When
// typed entries are present the untyped total is implied by them.
func tresGPUs(s string) ([]GPU, error) {
	var typed, untyped []GPU
	for _, e := range list(s) {
		k, v, ok := strings.Cut(e, "=")
		if !ok || (k != "gres/gpu" && !strings.HasPrefix(k, "gres/gpu:")) {
			continue
		}
		c, err := gresCount(v)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", clip(k), err)
		}
		if typ, ok := strings.CutPrefix(k, "gres/gpu:"); ok {
			typed = addGPU(typed, GPU{Type: typ, Count: c})
		} else {
			untyped = addGPU(untyped, GPU{Count: c})
		}
	}
	if len(typed) > 0 {
		return typed, nil
	}
	return untyped, nil
}

func addGPU(gs []GPU, g GPU) []GPU {
	for i := range gs {
		if gs[i].Type == g.Type {
			gs[i].Count = min(gs[i].Count+g.Count, maxGPUsPerNode)
			return gs
		}
	}
	return append(gs, g)
}

func gresCount(s string) (int, error) {
	c, err := strconv.Atoi(s)
	if err != nil || c < 0 || c > maxGPUsPerNode {
		return 0, fmt.Errorf("count %q is not a number from 0 to %d", clip(s), maxGPUsPerNode)
	}
	return c, nil
}
