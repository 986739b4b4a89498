package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/aicloud/gpusuite/internal/spool"
)

const checkpointName = "checkpoint.json"

type checkpoint struct {
	Version int    `json:"version"`
	Cluster string `json:"cluster"`
	Node    string `json:"node"`
	NextSeq uint64 `json:"next_seq"`
	// BootID is the kernel's boot id when the checkpoint was written.
	BootID string               `json:"boot_id,omitempty"`
	Allocs []*Alloc             `json:"allocs"`
	Aggs   []*aggState          `json:"aggs"`
	Seen   map[string]time.Time `json:"seen"`
	Ended  map[string]time.Time `json:"ended"`
}

func (a *Agent) loadCheckpoint() error {
	p := filepath.Join(a.stateDir, checkpointName)
	data, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		// A fresh start: sequence numbers begin at the time in ms, so a
		// wiped state directory never reuses a key already shipped.
		a.nextSeq = uint64(a.now().UnixMilli())
		return nil
	}
	if err != nil {
		return fmt.Errorf("read checkpoint %q: %w", p, err)
	}
	var cp checkpoint
	if err := json.Unmarshal(data, &cp); err != nil {
		return fmt.Errorf("checkpoint %q is damaged (move it away to start afresh): %w", p, err)
	}
	if cp.Cluster != a.cluster || cp.Node != a.node {
		return fmt.Errorf("checkpoint %q belongs to %s/%s, not %s/%s (move it away to start afresh)", p, cp.Cluster, cp.Node, a.cluster, a.node)
	}
	a.nextSeq = cp.NextSeq
	a.prevBootID = cp.BootID
	for _, al := range cp.Allocs {
		a.allocs[jobKey(al.Job, al.Restart)] = al
	}
	for _, g := range cp.Aggs {
		a.aggs[g.Key] = g
	}
	if cp.Seen != nil {
		a.seen = cp.Seen
	}
	if cp.Ended != nil {
		a.ended = cp.Ended
	}
	return nil
}

func (a *Agent) saveCheckpoint() error {
	cp := checkpoint{Version: 1, Cluster: a.cluster, Node: a.node, NextSeq: a.nextSeq, BootID: a.bootID, Seen: a.seen, Ended: a.ended}
	for _, k := range sortedKeys(a.allocs) {
		cp.Allocs = append(cp.Allocs, a.allocs[k])
	}
	for _, k := range sortedKeys(a.aggs) {
		cp.Aggs = append(cp.Aggs, a.aggs[k])
	}
	data, err := json.Marshal(cp)
	if err != nil {
		return fmt.Errorf("encode checkpoint: %w", err)
	}
	return spool.Dir{Path: a.stateDir}.Replace(checkpointName, data)
}

// prune forgets event keys and ended jobs after two days.
func (a *Agent) prune() {
	cut := a.now().Add(-48 * time.Hour)
	for k, t := range a.seen {
		if t.Before(cut) {
			delete(a.seen, k)
		}
	}
	for k, t := range a.ended {
		if t.Before(cut) {
			delete(a.ended, k)
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
