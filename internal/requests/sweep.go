package requests

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/spool"
)

// Anyone may write the note queue's pending/, so the writer bounds what
// one pass spends there and what any one owner gets of it: what is not a
// request is removed, one owner's requests beyond a share wait or are
// dropped, and the outcomes kept in applied/ are bounded by age and by
// count per owner.

// Bounds of one pass, beyond those of every queue (MaxListed, maxLooked).
const (
	// MaxPerOwnerPass bounds the note requests of one owner (not root
	// or the service user) one pass applies; the owner's next ones wait
	// for the next pass.
	MaxPerOwnerPass = 50
	// MaxQueuedPerOwner bounds the note requests one owner may have
	// waiting: those past it in a pass (the newest) are removed without
	// an outcome, with a log line.
	MaxQueuedPerOwner = 500
	// MaxOutcomesPerOwner bounds the outcomes of one owner's note
	// requests kept in applied/; the oldest go first.
	MaxOutcomesPerOwner = 1000
	// maxRead bounds the entries one pass reads at all: entries it may
	// neither use nor remove do not take the requests' share of a pass
	// (maxLooked), but a pass still ends.
	maxRead = 1_000_000
	// maxRemembered bounds the entries that cannot be removed named in
	// the writer's memory of them (unremovable.json).
	maxRemembered = 1000
	// maxMemoryBytes bounds a read of that memory.
	maxMemoryBytes = 1 << 20
)

// limits are the bounds of a pass, as a value so that tests can make
// them small.
type limits struct {
	looked, listed, read     int
	perOwner, queuedPerOwner int
	outcomesPerOwner, memory int
	ignoreOutcomes           int
}

func defaultLimits() limits {
	return limits{looked: maxLooked, listed: MaxListed, read: maxRead, perOwner: MaxPerOwnerPass,
		queuedPerOwner: MaxQueuedPerOwner, outcomesPerOwner: MaxOutcomesPerOwner, memory: maxRemembered,
		ignoreOutcomes: MaxIgnoreOutcomes}
}

// sweep is the writer's pass over the note queue's pending/.
type sweep struct {
	now time.Time
	// trusted owners (root, the service user) have no share.
	trusted func(uid int) bool
	lim     limits
	log     *slog.Logger
}

// pendingEntry is a request file and its owner.
type pendingEntry struct {
	name  string
	owner int
}

// isRequestName reports whether e may be a request file: *.json, not
// hidden, not a directory.
func isRequestName(e fs.DirEntry) bool {
	n := e.Name()
	return !e.IsDir() && !strings.HasPrefix(n, ".") && strings.HasSuffix(n, ".json")
}

// openQueue opens the queue directory d for listing: nil, and no error,
// when d is missing (no request was ever filed).
func openQueue(d string) (*os.File, error) {
	f, err := os.Open(d)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("requests: %w", err)
	}
	return f, nil
}

// pendingNames are up to MaxListed request file names of d, sorted
// (oldest first), among its first maxLooked entries; none when d is
// missing. It reads the queue only.
func pendingNames(d string) ([]string, error) {
	f, err := openQueue(d)
	if f == nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	for looked := 0; looked < maxLooked && len(names) < MaxListed; {
		ents, err := f.ReadDir(min(256, maxLooked-looked))
		looked += len(ents)
		for _, e := range ents {
			if isRequestName(e) && len(names) < MaxListed {
				names = append(names, e.Name())
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(ents) == 0) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("requests: %w", err)
		}
	}
	sort.Strings(names)
	return names, nil
}

// scan returns the request names of pending/ d this pass applies, sorted
// (oldest first). On the way it removes what can never be a request
// (junk); an entry it cannot remove is named once in the log, with its
// owner, and takes no share of the pass. Each owner but the trusted gets
// its oldest lim.perOwner requests applied; the next wait, and those past
// lim.queuedPerOwner are removed without an outcome.
func (sw *sweep) scan(d string) ([]string, error) {
	f, err := openQueue(d)
	if f == nil {
		return nil, err
	}
	defer f.Close()
	var found, stuck []pendingEntry
	looked, read, whole := 0, 0, false
	for looked < sw.lim.looked && read < sw.lim.read {
		ents, err := f.ReadDir(min(256, sw.lim.read-read))
		read += len(ents)
		for _, e := range ents {
			if looked >= sw.lim.looked {
				break // the rest wait for the next pass
			}
			// Only a regular file may be a request: a link, a FIFO or a
			// directory is junk, whatever its name, and takes no
			// owner's share.
			if isRequestName(e) && e.Type().IsRegular() {
				fi, err := e.Info()
				if err != nil {
					continue // its writer took it back
				}
				found = append(found, pendingEntry{e.Name(), ownerOf(fi)})
				looked++
				continue
			}
			switch removed, owner := sw.removeJunk(filepath.Join(d, e.Name()), e); {
			case removed:
				looked++
			case owner != -2:
				stuck = append(stuck, pendingEntry{e.Name(), owner})
			}
		}
		if errors.Is(err, io.EOF) || (err == nil && len(ents) == 0) {
			whole = true
			break
		}
		if err != nil {
			return nil, fmt.Errorf("requests: %w", err)
		}
	}
	sw.remember(d, stuck, whole)
	sort.Slice(found, func(i, j int) bool { return found[i].name < found[j].name })
	var names []string
	seen, dropped := map[int]int{}, map[int]int{}
	for _, p := range found {
		if sw.trusted == nil || !sw.trusted(p.owner) {
			k := seen[p.owner]
			seen[p.owner]++
			switch {
			case k >= sw.lim.queuedPerOwner:
				if err := os.Remove(filepath.Join(d, p.name)); err == nil || errors.Is(err, fs.ErrNotExist) {
					dropped[p.owner]++
				}
				continue
			case k >= sw.lim.perOwner:
				continue // waits for a later pass
			}
		}
		if len(names) < sw.lim.listed {
			names = append(names, p.name)
		}
	}
	for owner, n := range dropped {
		sw.log.Warn("note requests past the most one user may queue removed, no outcome kept", "uid", owner, "removed", n, "most", sw.lim.queuedPerOwner)
	}
	return names, nil
}

// ownerOf is the uid owning fi, -1 when unknown.
func ownerOf(fi fs.FileInfo) int {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return int(st.Uid)
	}
	return -1
}

// isTempName reports whether name is one writeFile gives its temporary
// file: "." then 16 hex digits then ".tmp".
func isTempName(name string) bool {
	if len(name) != 21 || name[0] != '.' || !strings.HasSuffix(name, ".tmp") {
		return false
	}
	for _, c := range name[1:17] {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// removeJunk removes path, an entry of the note queue's pending/ that is
// not a request, unless it is a writer's temporary file written within
// junkAge of now (either way: one dated ahead is not being written).
// A directory is removed only when empty: the writer never walks a
// user's tree. It reports whether the entry is gone; when not, the
// entry's owner, or -2 when it was spared or could not be looked at.
func (sw *sweep) removeJunk(path string, e fs.DirEntry) (bool, int) {
	fi, err := e.Info()
	if errors.Is(err, fs.ErrNotExist) {
		return true, -1
	}
	if err != nil {
		return false, -2
	}
	if isTempName(e.Name()) && fi.Mode().IsRegular() {
		if age := sw.now.Sub(fi.ModTime()); age > -junkAge && age < junkAge {
			return false, -2
		}
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return false, ownerOf(fi)
	}
	sw.log.Info("not a note request, removed from the queue", "path", path, "mode", fi.Mode().String(), "uid", ownerOf(fi))
	return true, -1
}

// memoryFile is where the writer keeps the names of the entries of
// pending/ it could not remove, so that it names each in the log once,
// not on every pass. It lies beside pending/, where users may not write.
func memoryFile(pending string) string {
	return filepath.Join(filepath.Dir(pending), "unremovable.json")
}

// stuckMemory is the content of memoryFile.
type stuckMemory struct {
	Names []string `json:"names"`
	// More counts the entries past the names kept.
	More int `json:"more,omitempty"`
}

// remember logs the entries of this pass that could not be removed and
// were not already named, and keeps their names. whole: the pass read
// all of pending/, so an entry not seen is gone; otherwise the names of
// entries not reached this pass are kept.
func (sw *sweep) remember(pending string, stuck []pendingEntry, whole bool) {
	path := memoryFile(pending)
	old := readMemory(path)
	known := make(map[string]bool, len(old.Names))
	for _, n := range old.Names {
		known[n] = true
	}
	var now stuckMemory
	seen := make(map[string]bool, len(stuck))
	for _, s := range stuck {
		seen[s.name] = true
		if len(now.Names) >= sw.lim.memory {
			now.More++
			continue
		}
		if !known[s.name] {
			sw.log.Warn("not a note request, and the writer may not remove it (a directory is removed only when empty): remove it by hand",
				"path", filepath.Join(pending, s.name), "uid", s.owner)
		}
		now.Names = append(now.Names, s.name)
	}
	if !whole {
		for _, n := range old.Names {
			if !seen[n] && len(now.Names) < sw.lim.memory {
				now.Names = append(now.Names, n)
			}
		}
		now.More = max(now.More, old.More)
	}
	if now.More > old.More {
		sw.log.Warn("more entries of the note queue the writer may not remove than it names: list them by hand", "dir", pending, "unnamed", now.More)
	}
	sort.Strings(now.Names)
	sort.Strings(old.Names)
	if slices.Equal(now.Names, old.Names) && now.More == old.More {
		return
	}
	if len(now.Names) == 0 && now.More == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			sw.log.Warn("memory of unremovable queue entries not removed", "path", path, "err", err)
		}
		return
	}
	data, err := json.Marshal(now)
	if err == nil {
		err = writeFile(path, data)
	}
	if err != nil {
		sw.log.Warn("memory of unremovable queue entries not kept: they are named again next pass", "path", path, "err", err)
	}
}

// readMemory reads memoryFile path; empty when missing or unreadable.
func readMemory(path string) stuckMemory {
	var m stuckMemory
	data, _, err := spool.ReadRegular(path, maxMemoryBytes)
	if err != nil || json.NewDecoder(bytes.NewReader(data)).Decode(&m) != nil {
		return stuckMemory{}
	}
	return m
}

// recordedOwner is the owner an outcome records (its uid, which the
// writer sets from the request file's owner), -1 when it records none or
// cannot be read. Never the file's name: a name is what a user chose.
func recordedOwner(path string) int {
	r, _, _, err := readRequest(path)
	if err != nil {
		return -1
	}
	return r.UID
}

// nameOwner is the owner an outcome's name carries (".uN.json"), -1 when
// none: a hint of which outcomes to read, never whose they are.
func nameOwner(name string) int {
	base := strings.TrimSuffix(name, ".json")
	i := strings.LastIndex(base, ".u")
	if i < 0 {
		return -1
	}
	uid, err := strconv.Atoi(base[i+2:])
	if err != nil || uid < 0 {
		return -1
	}
	return uid
}

// pruneApplied removes the outcomes under d last written before cutoff,
// and each owner's oldest past lim.outcomesPerOwner, looking at most at
// lim.looked entries in one pass. The owner is the one each outcome
// records; outcomes are read for it only when their names say that one
// owner may have more than it may keep.
func pruneApplied(d string, cutoff time.Time, lim limits, log *slog.Logger) {
	f, err := os.Open(d)
	if err != nil {
		return
	}
	defer f.Close()
	ents, _ := f.ReadDir(lim.looked)
	type kept struct {
		name string
		at   time.Time
	}
	var young []kept
	old, over := 0, 0
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if fi.ModTime().Before(cutoff) {
			if err := os.Remove(filepath.Join(d, e.Name())); err == nil {
				old++
			}
			continue
		}
		young = append(young, kept{e.Name(), fi.ModTime()})
	}
	if len(young) > lim.outcomesPerOwner {
		// The name says which outcomes may be past the bound, so that a
		// pass reads only those (applied/ may be on NFS); what is removed
		// is decided by the owner each records.
		byName := map[int][]kept{}
		for _, k := range young {
			o := nameOwner(k.name)
			byName[o] = append(byName[o], k)
		}
		byOwner := map[int][]kept{}
		for _, ks := range byName {
			if len(ks) <= lim.outcomesPerOwner {
				continue
			}
			for _, k := range ks {
				o := recordedOwner(filepath.Join(d, k.name))
				byOwner[o] = append(byOwner[o], k)
			}
		}
		for _, ks := range byOwner {
			if len(ks) <= lim.outcomesPerOwner {
				continue
			}
			// Newest first; the name orders outcomes of one instant.
			sort.Slice(ks, func(i, j int) bool {
				if !ks[i].at.Equal(ks[j].at) {
					return ks[i].at.After(ks[j].at)
				}
				return ks[i].name > ks[j].name
			})
			for _, k := range ks[lim.outcomesPerOwner:] {
				if err := os.Remove(filepath.Join(d, k.name)); err == nil {
					over++
				}
			}
		}
	}
	if old > 0 {
		log.Info("old request outcomes pruned", "dir", d, "files", old, "before", cutoff.UTC().Format(time.RFC3339))
	}
	if over > 0 {
		log.Info("request outcomes past the most kept per user pruned", "dir", d, "files", over, "most", lim.outcomesPerOwner)
	}
}
