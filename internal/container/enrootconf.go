package container

import (
	"bufio"
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
)

// Paths are the enroot directories that matter to sbuild, as seen from
// this server.
type Paths struct {
	Data, Cache, Config, Runtime, Temp string
}

// User identifies who runs the command, for expanding $(id -u) and the
// like in enroot.conf.
type User struct {
	Name     string
	UID, GID int
	Home     string
}

// ParseEnrootConf reads enroot.conf: "KEY VALUE" lines, '#' comments.
// Values are kept unexpanded.
func ParseEnrootConf(data []byte) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, val, _ := strings.Cut(line, " ")
		if k2, v2, ok := strings.Cut(line, "\t"); ok && len(k2) < len(key) {
			key, val = k2, v2
		}
		if !strings.HasPrefix(key, "ENROOT_") {
			return nil, fmt.Errorf("line %d: %q is not an ENROOT_ setting", n, key)
		}
		out[key] = strings.Trim(strings.TrimSpace(val), `"'`)
	}
	return out, sc.Err()
}

// ExpandPath expands what enroot.conf and the site config write in paths:
// $VAR, ${VAR}, ${VAR:-default}, $(id -u), $(id -g), $(id -un) and a
// leading '~'. Variables come from getenv, then from u.
func ExpandPath(s string, u User, getenv func(string) string) string {
	s = strings.NewReplacer("$(id -u)", fmt.Sprint(u.UID), "$(id -g)", fmt.Sprint(u.GID), "$(id -un)", u.Name, "$(whoami)", u.Name).Replace(s)
	lookup := func(k string) string {
		if v := getenv(k); v != "" {
			return v
		}
		switch k {
		case "HOME":
			return u.Home
		case "USER", "LOGNAME":
			return u.Name
		case "UID":
			return fmt.Sprint(u.UID)
		}
		return ""
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		if s[i+1] == '{' {
			end := strings.IndexByte(s[i:], '}')
			if end < 0 {
				b.WriteString(s[i:])
				break
			}
			expr := s[i+2 : i+end]
			name, def, hasDef := strings.Cut(expr, ":-")
			v := lookup(name)
			if v == "" && hasDef {
				v = ExpandPath(def, u, getenv)
			}
			b.WriteString(v)
			i += end
			continue
		}
		j := i + 1
		for j < len(s) && (s[j] == '_' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= '0' && s[j] <= '9') {
			j++
		}
		if j == i+1 {
			b.WriteByte('$')
			continue
		}
		b.WriteString(lookup(s[i+1 : j]))
		i = j - 1
	}
	out := b.String()
	if out == "~" || strings.HasPrefix(out, "~/") {
		out = u.Home + out[1:]
	}
	return out
}

// ResolvePaths applies enroot's rules: the environment wins over
// enroot.conf, which wins over the XDG defaults. dataOverride (the site's
// container.data_path) wins over all for the data path.
func ResolvePaths(conf map[string]string, dataOverride string, u User, getenv func(string) string) Paths {
	get := func(key, def string) string {
		if v := getenv(key); v != "" {
			return filepath.Clean(ExpandPath(v, u, getenv))
		}
		if v := conf[key]; v != "" {
			return filepath.Clean(ExpandPath(v, u, getenv))
		}
		return filepath.Clean(ExpandPath(def, u, getenv))
	}
	p := Paths{
		Data:    get("ENROOT_DATA_PATH", "${XDG_DATA_HOME:-~/.local/share}/enroot"),
		Cache:   get("ENROOT_CACHE_PATH", "${XDG_CACHE_HOME:-~/.cache}/enroot"),
		Config:  get("ENROOT_CONFIG_PATH", "${XDG_CONFIG_HOME:-~/.config}/enroot"),
		Runtime: get("ENROOT_RUNTIME_PATH", "${XDG_RUNTIME_DIR:-/run/user/$(id -u)}/enroot"),
		Temp:    get("ENROOT_TEMP_PATH", "${TMPDIR:-/tmp}"),
	}
	if dataOverride != "" {
		p.Data = filepath.Clean(ExpandPath(dataOverride, u, getenv))
	}
	return p
}
