// Package container holds the logic of sbuild and srun-wrap: container
// names, image references, mounts, srun and sbatch command lines, the
// preflight checks, enroot credentials, the metadata kept beside each
// container, and listing and removing containers.
//
// Files:
//   - name.go, image.go, registry.go, mount.go: names, image references,
//     registries, mounts.
//   - command.go, srunopts.go, shellquote.go, validate.go: srun and sbatch
//     lines, splitting srun's options from the command's, quoting safe to
//     paste, time and project checks.
//   - preflight.go, credentials.go, enrootconf.go: the checks with their
//     fixes, enroot credentials, enroot.conf's paths.
//   - store.go: the metadata kept beside each container.
//   - sys.go: the system a command runs against; usage.go: usage errors.
package container

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"strings"
)

// Prefix is what pyxis puts before a --container-name to make the enroot
// container's name (with container_scope=global).
const Prefix = "pyxis_"

// MaxNameLen bounds a sanitised name; enroot keeps a container as a
// directory and long names make unreadable listings.
const MaxNameLen = 64

// Sanitize turns any string into a name pyxis and enroot accept: lower-case
// ASCII letters, digits, '.', '_' and '-', starting with a letter or digit.
// Every run of other characters becomes one '-'. ':' (pyxis's flag
// separator), ',' (its list separator) and '/' never survive. The result
// may be empty.
func Sanitize(s string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		ok := r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-'
		if !ok {
			if !dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			dash = true
			continue
		}
		b.WriteRune(r)
		dash = r == '-'
	}
	out := strings.Trim(b.String(), "-._")
	if len(out) > MaxNameLen {
		out = strings.TrimRight(out[:MaxNameLen], "-._")
	}
	return out
}

// NameFromDir derives the container name of a project directory from its
// last element. A directory whose name has nothing usable (for example
// only Japanese characters) gets "p-" and a hash of its absolute path, so
// the same directory always maps to the same container.
func NameFromDir(dir string) string {
	if n := Sanitize(filepath.Base(dir)); n != "" {
		return n
	}
	sum := sha256.Sum256([]byte(dir))
	return "p-" + hex.EncodeToString(sum[:4])
}

// CheckName validates a name the user gave with --name. The pyxis_ prefix
// is accepted and removed. A name that Sanitize would change is refused
// with the name it would become.
func CheckName(name string) (string, error) {
	n := strings.TrimPrefix(name, Prefix)
	if n == "" {
		return "", fmt.Errorf("container name %q is empty; give a name such as \"myproject\"", name)
	}
	if s := Sanitize(n); s != n {
		if s == "" {
			return "", fmt.Errorf("container name %q has no usable characters; use lower-case letters, digits, '.', '_' and '-'", name)
		}
		return "", fmt.Errorf("container name %q has characters pyxis or enroot cannot use; use %q instead", name, s)
	}
	return n, nil
}

// EnrootName is the name enroot lists for a pyxis container name.
func EnrootName(name string) string { return Prefix + name }

// Suffixes of the names sbuild --rebuild uses beside a container: the new
// one is built as NAME.sbuild-new and swapped in only once it exists, the
// old one waits as NAME.sbuild-old until it is removed, so a failed
// rebuild leaves the old container as it was.
const (
	NewSuffix = ".sbuild-new"
	OldSuffix = ".sbuild-old"
)
