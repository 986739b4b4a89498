package container

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/aicloud/gpusuite/internal/i18n"
	"github.com/aicloud/gpusuite/internal/report/table"
	"github.com/aicloud/gpusuite/internal/spool"
)

// Meta is what sbuild records beside a container, in a hidden file in the
// enroot data path that enroot itself ignores.
type Meta struct {
	Name    string    `json:"name"`
	Image   string    `json:"image"`
	Ref     string    `json:"ref"`
	Tag     string    `json:"tag,omitempty"`
	Digest  string    `json:"digest,omitempty"`
	Created time.Time `json:"created"`
	Project string    `json:"project"`
	Setup   string    `json:"setup,omitempty"`
	// SetupSHA256 is the hash of the setup script that ran.
	SetupSHA256 string `json:"setup_sha256,omitempty"`
	// SetupExit is the setup script's exit code when it failed.
	SetupExit int    `json:"setup_exit,omitempty"`
	Saved     string `json:"saved,omitempty"`
}

// MetaPath is where the metadata of container name lives.
func MetaPath(dataPath, name string) string {
	return filepath.Join(dataPath, "."+Prefix+name+".gpusuite.json")
}

// WriteMeta writes m durably: a temporary file, then a rename.
func WriteMeta(dataPath string, m Meta) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode metadata: %w", err)
	}
	return spool.ReplaceFile(MetaPath(dataPath, m.Name), bytes.NewReader(append(data, '\n')), 0o600)
}

// ReadMeta reads the metadata of name; a missing file gives ok=false.
func ReadMeta(dataPath, name string) (m Meta, ok bool, err error) {
	data, err := os.ReadFile(MetaPath(dataPath, name))
	if err != nil {
		if isNotExist(err) {
			return Meta{}, false, nil
		}
		return Meta{}, false, fmt.Errorf("read %q: %w", MetaPath(dataPath, name), err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return Meta{}, false, fmt.Errorf("read %q: %w", MetaPath(dataPath, name), err)
	}
	return m, true, nil
}

// Entry is one container in a listing.
type Entry struct {
	Name    string
	Size    int64
	SizeErr bool
	Meta    Meta
	HasMeta bool
	ModTime time.Time
}

// Exists reports whether the enroot container for name is in dataPath.
func Exists(dataPath, name string) (bool, error) {
	fi, err := os.Stat(filepath.Join(dataPath, EnrootName(name)))
	if err != nil {
		if isNotExist(err) {
			return false, nil
		}
		return false, fmt.Errorf("stat %q: %w", filepath.Join(dataPath, EnrootName(name)), err)
	}
	return fi.IsDir(), nil
}

// List returns the user's pyxis containers in dataPath, by name, with
// their size and metadata. A missing data path is an empty list.
func List(dataPath string, withSize bool) ([]Entry, error) {
	des, err := readData(dataPath)
	if err != nil {
		return nil, err
	}
	var out []Entry
	for _, de := range des {
		if !de.IsDir() || !strings.HasPrefix(de.Name(), Prefix) {
			continue
		}
		e := Entry{Name: strings.TrimPrefix(de.Name(), Prefix)}
		if fi, err := de.Info(); err == nil {
			e.ModTime = fi.ModTime()
		}
		if withSize {
			e.Size, e.SizeErr = dirSize(filepath.Join(dataPath, de.Name()))
		}
		m, ok, err := ReadMeta(dataPath, e.Name)
		if err == nil && ok {
			e.Meta, e.HasMeta = m, true
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// readData lists the data path; a missing one lists nothing.
func readData(dataPath string) ([]os.DirEntry, error) {
	des, err := os.ReadDir(dataPath)
	if isNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read enroot data path %q: %w", dataPath, err)
	}
	return des, nil
}

// OrphanMeta lists metadata files whose container is gone.
func OrphanMeta(dataPath string) ([]string, error) {
	des, err := readData(dataPath)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, de := range des {
		n := de.Name()
		if !strings.HasPrefix(n, "."+Prefix) || !strings.HasSuffix(n, ".gpusuite.json") {
			continue
		}
		name := strings.TrimSuffix(strings.TrimPrefix(n, "."+Prefix), ".gpusuite.json")
		if ok, _ := Exists(dataPath, name); !ok {
			out = append(out, name)
		}
	}
	return out, nil
}

// dirSize adds up the apparent size of regular files; unreadable parts
// (files of the remapped root) make partial true.
func dirSize(root string) (size int64, partial bool) {
	_ = filepath.WalkDir(root, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			partial = true
			return nil
		}
		if d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				size += fi.Size()
			}
		}
		return nil
	})
	return size, partial
}

// WriteList prints a listing as a table, aligned by display width (a
// Japanese heading takes two columns a character): text/tabwriter's
// layout for English, byte for byte.
func WriteList(w io.Writer, es []Entry, busy map[string][]string, tr *i18n.Printer) error {
	t := &table.Table{Columns: []table.Column{{Title: tr.T("NAME")}, {Title: tr.T("ENROOT NAME")}, {Title: tr.T("SIZE")},
		{Title: tr.T("CREATED")}, {Title: tr.T("IMAGE")}, {Title: tr.T("SETUP")}, {Title: tr.T("IN USE")}}}
	for _, e := range es {
		size := human(uint64(e.Size))
		if e.SizeErr {
			size = ">" + size
		}
		created, image, setup := tr.Time(e.ModTime, "2006-01-02 15:04"), "?", "-"
		if e.HasMeta {
			created = tr.Time(e.Meta.Created.Local(), "2006-01-02 15:04")
			image = e.Meta.Image
			if e.Meta.Setup != "" {
				setup = filepath.Base(e.Meta.Setup) + " " + shortHash(e.Meta.SetupSHA256)
				if e.Meta.SetupExit != 0 {
					setup += fmt.Sprintf(" FAILED(%d)", e.Meta.SetupExit)
				}
			}
		}
		use := "-"
		if j := busy[e.Name]; len(j) > 0 {
			use = tr.T("job %s", strings.Join(j, ","))
		}
		t.Rows = append(t.Rows, table.Row{Cells: []any{e.Name, Prefix + e.Name, size, created, image, setup, use}})
	}
	return table.Write(w, t, table.Options{Format: table.Aligned})
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// ParseSqueue reads `squeue --noheader --format=%i|%k` output and maps
// container names to the ids of jobs that use them.
func ParseSqueue(out string) map[string][]string {
	busy := map[string][]string{}
	for _, line := range strings.Split(out, "\n") {
		id, comment, ok := strings.Cut(strings.TrimSpace(line), "|")
		if !ok {
			continue
		}
		if name, ok := strings.CutPrefix(strings.TrimSpace(comment), CommentPrefix); ok {
			busy[name] = append(busy[name], id)
		}
	}
	return busy
}

// SqueueArgv asks Slurm for the user's unfinished jobs and their comments.
func SqueueArgv(user string) []string {
	return []string{"squeue", "--noheader", "--user=" + user, "--states=PENDING,RUNNING,CONFIGURING,SUSPENDED", "--format=%i|%k"}
}

// Swap puts container fresh in the place of container name and moves the
// old one to old, by renaming their directories in dataPath (the same
// directory, so each rename is atomic). When the second rename fails the
// old container is put back. The caller removes old.
func Swap(dataPath, name, fresh, old string) error {
	path := func(n string) string { return filepath.Join(dataPath, EnrootName(n)) }
	if err := os.Rename(path(name), path(old)); err != nil {
		return fmt.Errorf("move the old container aside: %w", err)
	}
	if err := os.Rename(path(fresh), path(name)); err != nil {
		if berr := os.Rename(path(old), path(name)); berr != nil {
			return fmt.Errorf("put the new container in place: %w (and the old one is left as %s: %v)", err, EnrootName(old), berr)
		}
		return fmt.Errorf("put the new container in place: %w", err)
	}
	return nil
}
