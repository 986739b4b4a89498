package container

import (
	"fmt"
	"path/filepath"
	"strings"
)

// Mount is one bind mount handed to pyxis's --container-mounts.
type Mount struct {
	Src, Dst string
	ReadOnly bool
}

// ParseMount reads SRC:DST[:ro|rw]. SRC is made absolute against cwd (a
// relative path in a batch job would be resolved on the GPU server, where
// it means something else). Paths holding ',' or ':' are refused: pyxis
// splits its mount list on both and would mount the wrong thing.
func ParseMount(spec, cwd string) (Mount, error) {
	parts := strings.Split(spec, ":")
	if len(parts) < 2 || len(parts) > 3 {
		if len(parts) > 3 {
			return Mount{}, fmt.Errorf("mount %q: a path contains ':', which pyxis cannot mount; rename it or mount its parent directory", spec)
		}
		return Mount{}, fmt.Errorf("mount %q: write SRC:DST or SRC:DST:ro, e.g. --mount /data/shared:/shared:ro", spec)
	}
	m := Mount{Src: parts[0], Dst: parts[1]}
	if len(parts) == 3 {
		switch parts[2] {
		case "ro":
			m.ReadOnly = true
		case "rw":
		default:
			return Mount{}, fmt.Errorf("mount %q: flag %q is not ro or rw (a path containing ':' cannot be mounted)", spec, parts[2])
		}
	}
	if m.Src == "" || m.Dst == "" {
		return Mount{}, fmt.Errorf("mount %q: SRC and DST must not be empty; write SRC:DST", spec)
	}
	if strings.Contains(spec, ",") {
		return Mount{}, fmt.Errorf("mount %q: a path contains ',', which pyxis reads as a list separator; rename it or mount its parent directory", spec)
	}
	if !strings.HasPrefix(m.Dst, "/") {
		return Mount{}, fmt.Errorf("mount %q: DST %q must be an absolute path inside the container, e.g. /data", spec, m.Dst)
	}
	if strings.HasPrefix(m.Src, "~/") || m.Src == "~" {
		return Mount{}, fmt.Errorf("mount %q: '~' is not expanded here; write the full path, e.g. $HOME/%s", spec, strings.TrimPrefix(strings.TrimPrefix(m.Src, "~"), "/"))
	}
	if !filepath.IsAbs(m.Src) {
		m.Src = filepath.Join(cwd, m.Src)
	}
	m.Src = filepath.Clean(m.Src)
	m.Dst = filepath.Clean(m.Dst)
	return m, nil
}

// CheckPath refuses a path pyxis cannot mount, saying which character and
// what to do. what names the path for the message ("project directory").
func CheckPath(what, p string) error {
	if i := strings.IndexAny(p, ",:"); i >= 0 {
		return fmt.Errorf("%s %q contains %q, which pyxis cannot mount; rename the directory or run from one without ',' or ':'", what, p, p[i:i+1])
	}
	return nil
}

// String writes the mount in pyxis's syntax.
func (m Mount) String() string {
	s := m.Src + ":" + m.Dst
	if m.ReadOnly {
		s += ":ro"
	}
	return s
}

// JoinMounts writes a --container-mounts value.
func JoinMounts(ms []Mount) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.String()
	}
	return strings.Join(parts, ",")
}
