// Package ignorereq carries ignore/unignore requests from `gpuacct ignore`
// to the store's one writer. A request is a JSON file in <dir>/pending/,
// written whole (temp, fsync, rename) by root or the service user; the
// writer (gpuacct serve each pass, or gpuacct ignore itself when no
// writer runs) applies it in one transaction through store.Batch.SetIgnored
// and moves it to <dir>/applied/ with the outcome. The applied files are
// the log of who changed what (docs/reports.md).
package ignorereq

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/store"
)

// Schema is the request file's schema.
const Schema = "gpusuite.ignore/v1"

// Actions.
const (
	Ignore   = "ignore"
	Unignore = "unignore"
)

// Request is one ignore or unignore of some jobs.
type Request struct {
	Schema string `json:"schema"`
	ID     string `json:"id"`
	Action string `json:"action"`
	// Jobs are as users type them: 1234 (every run, and every task when
	// it is an array), 1234_7, 1234+1.
	Jobs    []string  `json:"jobs"`
	Cluster string    `json:"cluster,omitempty"`
	Reason  string    `json:"reason,omitempty"`
	By      string    `json:"by"`
	UID     int       `json:"uid"`
	Host    string    `json:"host,omitempty"`
	Time    time.Time `json:"time"`
	// Outcome fields, set when applied.
	AppliedAt *time.Time `json:"applied_at,omitempty"`
	Changed   []string   `json:"changed,omitempty"`
	NotFound  []string   `json:"not_found,omitempty"`
	Error     string     `json:"error,omitempty"`
}

// Dirs under the request directory.
func pendingDir(dir string) string { return filepath.Join(dir, "pending") }
func appliedDir(dir string) string { return filepath.Join(dir, "applied") }

// Submit writes r into dir/pending durably and returns its file path.
func Submit(dir string, r *Request) (string, error) {
	r.Schema = Schema
	if r.ID == "" {
		var b [4]byte
		_, _ = rand.Read(b[:])
		// Time, then how many requests came before (orders requests of
		// the same second), then pid and random bytes (unique).
		pending, applied, _ := List(dir)
		r.ID = fmt.Sprintf("%s-%06d-%d-%s", r.Time.UTC().Format("20060102T150405Z"), len(pending)+len(applied), os.Getpid(), hex.EncodeToString(b[:]))
	}
	pd := pendingDir(dir)
	if err := os.MkdirAll(pd, 0o755); err != nil {
		return "", fmt.Errorf("ignore request: %w", err)
	}
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return "", fmt.Errorf("ignore request: %w", err)
	}
	final := filepath.Join(pd, r.ID+".json")
	if err := writeFile(final, data); err != nil {
		return "", fmt.Errorf("ignore request: %w", err)
	}
	return final, nil
}

func writeFile(path string, data []byte) error {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(tmp)
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	d, err := os.Open(filepath.Dir(path))
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// List reads the requests in dir/pending and dir/applied, oldest first.
func List(dir string) (pending, applied []Request, err error) {
	read := func(d string) ([]Request, error) {
		ents, err := os.ReadDir(d)
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil, nil
			}
			return nil, fmt.Errorf("ignore requests: %w", err)
		}
		var out []Request
		for _, e := range ents {
			if strings.HasPrefix(e.Name(), ".") || !strings.HasSuffix(e.Name(), ".json") {
				continue
			}
			data, err := os.ReadFile(filepath.Join(d, e.Name()))
			if err != nil {
				return nil, fmt.Errorf("ignore requests: %w", err)
			}
			var r Request
			if err := json.Unmarshal(data, &r); err != nil {
				r = Request{ID: strings.TrimSuffix(e.Name(), ".json"), Error: "unreadable: " + err.Error()}
			}
			out = append(out, r)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		return out, nil
	}
	if pending, err = read(pendingDir(dir)); err != nil {
		return nil, nil, err
	}
	applied, err = read(appliedDir(dir))
	return pending, applied, err
}

// Options say how to apply.
type Options struct {
	Dir string
	Now time.Time
	// Trusted reports whether a file owner may change the ledger (root
	// and the service user).
	Trusted func(uid int) bool
	// Tag in a job's comment ignores it (report.ignore_tag); "" never.
	Tag  string
	Host string
}

// Apply applies every pending request, oldest first, each in its own
// transaction, and jobs whose comment carries the tag. It returns how
// many requests it applied. Run only by the store's writer.
func Apply(ctx context.Context, st *store.Store, o Options) (int, error) {
	pd := pendingDir(o.Dir)
	ents, err := os.ReadDir(pd)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return 0, fmt.Errorf("apply ignore requests: %w", err)
	}
	if err := os.MkdirAll(appliedDir(o.Dir), 0o755); err != nil && len(ents) > 0 {
		return 0, fmt.Errorf("apply ignore requests: %w", err)
	}
	n := 0
	for _, e := range ents {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		path := filepath.Join(pd, name)
		r, perr := readTrusted(path, o.Trusted)
		if perr != nil {
			r.ID = strings.TrimSuffix(name, ".json")
			r.Error = perr.Error()
		} else if err := applyOne(ctx, st, &r, o.Now); err != nil {
			return n, err
		}
		at := o.Now.UTC()
		r.AppliedAt = &at
		data, err := json.MarshalIndent(&r, "", "  ")
		if err != nil {
			return n, fmt.Errorf("apply ignore request %s: %w", name, err)
		}
		if err := writeFile(filepath.Join(appliedDir(o.Dir), name), data); err != nil {
			return n, fmt.Errorf("apply ignore request %s: %w", name, err)
		}
		if err := os.Remove(path); err != nil {
			return n, fmt.Errorf("apply ignore request %s: %w", name, err)
		}
		n++
	}
	if o.Tag != "" {
		if err := applyTag(ctx, st, o); err != nil {
			return n, err
		}
	}
	return n, nil
}

// readTrusted reads a request owned by a trusted user and writable by
// nobody else; anything else is recorded as refused, never applied.
func readTrusted(path string, trusted func(int) bool) (Request, error) {
	var r Request
	fi, err := os.Lstat(path)
	if err != nil {
		return r, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.Mode().IsRegular() || !ok {
		return r, errors.New("refused: not a regular file")
	}
	if trusted != nil && !trusted(int(st.Uid)) {
		return r, fmt.Errorf("refused: owned by uid %d, not root or the service user", st.Uid)
	}
	if fi.Mode().Perm()&0o022 != 0 {
		return r, fmt.Errorf("refused: writable by group or others (%v)", fi.Mode().Perm())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return r, err
	}
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return r, fmt.Errorf("refused: not a request: %v", err)
	}
	if r.Schema != Schema {
		return r, fmt.Errorf("refused: schema %q is not %s", r.Schema, Schema)
	}
	if r.Action != Ignore && r.Action != Unignore {
		return r, fmt.Errorf("refused: action %q", r.Action)
	}
	if trusted != nil && !trusted(r.UID) {
		return r, fmt.Errorf("refused: requested by uid %d", r.UID)
	}
	return r, nil
}

// rows finds the job rows a spec names.
func rows(ctx context.Context, b *store.Batch, cluster, spec string) ([]int64, error) {
	q := `SELECT id FROM jobs WHERE `
	var args []any
	base, restart, hasRestart := strings.Cut(spec, "+")
	if a, t, ok := strings.Cut(base, "_"); ok {
		q += `array_job_id = ? AND array_task_id = ?`
		args = append(args, a, t)
	} else {
		q += `(job_id = ? OR array_job_id = ?)`
		args = append(args, base, base)
	}
	if hasRestart {
		q += ` AND restart = ?`
		args = append(args, restart)
	}
	if cluster != "" {
		q += ` AND cluster = ?`
		args = append(args, cluster)
	}
	rs, err := b.Tx().QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("find job %s: %w", spec, err)
	}
	defer rs.Close()
	var out []int64
	for rs.Next() {
		var id int64
		if err := rs.Scan(&id); err != nil {
			return nil, fmt.Errorf("find job %s: %w", spec, err)
		}
		out = append(out, id)
	}
	return out, rs.Err()
}

func applyOne(ctx context.Context, st *store.Store, r *Request, now time.Time) error {
	b, err := st.Begin(ctx, now)
	if err != nil {
		return fmt.Errorf("apply ignore request %s: %w", r.ID, err)
	}
	reason := fmt.Sprintf("%s (by %s, %s)", r.Reason, r.By, r.Time.UTC().Format("2006-01-02 15:04Z"))
	for _, spec := range r.Jobs {
		ids, err := rows(ctx, b, r.Cluster, spec)
		if err != nil {
			b.Rollback()
			return fmt.Errorf("apply ignore request %s: %w", r.ID, err)
		}
		if len(ids) == 0 {
			r.NotFound = append(r.NotFound, spec)
			continue
		}
		for _, id := range ids {
			if err := b.SetIgnored(id, r.Action == Ignore, reason); err != nil {
				b.Rollback()
				return fmt.Errorf("apply ignore request %s: job %s: %w", r.ID, spec, err)
			}
		}
		r.Changed = append(r.Changed, spec)
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("apply ignore request %s: %w", r.ID, err)
	}
	return nil
}

// applyTag ignores jobs whose comment carries the tag, unless an applied
// unignore request named them.
func applyTag(ctx context.Context, st *store.Store, o Options) error {
	_, applied, err := List(o.Dir)
	if err != nil {
		return err
	}
	kept := map[string]bool{}
	for _, r := range applied {
		if r.Action == Unignore {
			for _, j := range r.Changed {
				kept[j] = true
			}
		}
	}
	b, err := st.Begin(ctx, o.Now)
	if err != nil {
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	rs, err := b.Tx().QueryContext(ctx, `SELECT id, job_id FROM jobs WHERE ignored = 0 AND comment IS NOT NULL AND instr(comment, ?) > 0`, o.Tag)
	if err != nil {
		b.Rollback()
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	type row struct{ id, job int64 }
	var todo []row
	for rs.Next() {
		var x row
		if err := rs.Scan(&x.id, &x.job); err != nil {
			rs.Close()
			b.Rollback()
			return fmt.Errorf("ignore tagged jobs: %w", err)
		}
		if !kept[strconv.FormatInt(x.job, 10)] {
			todo = append(todo, x)
		}
	}
	rs.Close()
	for _, x := range todo {
		if err := b.SetIgnored(x.id, true, "comment carries "+o.Tag); err != nil {
			b.Rollback()
			return fmt.Errorf("ignore tagged job %d: %w", x.job, err)
		}
	}
	if err := b.Commit(); err != nil {
		return fmt.Errorf("ignore tagged jobs: %w", err)
	}
	return nil
}
