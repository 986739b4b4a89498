package nfssync

import (
	"fmt"
	"path"
	"strings"
)

// Matcher decides which files are never touched. A pattern without "/"
// matches the file name ("*.swp"); one with "/" matches the trailing
// segments of the path below the watched directory (".git/objects/**"
// matches in every repository), "**" spanning any number of segments; one
// starting with "/" is anchored at the watched directory.
type Matcher struct {
	names    []string
	suffixes [][]string
	anchored [][]string
}

// NewMatcher compiles patterns.
func NewMatcher(patterns []string) (*Matcher, error) {
	m := &Matcher{}
	for _, p := range patterns {
		segs := strings.Split(strings.TrimPrefix(p, "/"), "/")
		for _, s := range segs {
			if s == "" {
				return nil, fmt.Errorf("exclude pattern %q has an empty segment", p)
			}
			if _, err := path.Match(s, ""); err != nil {
				return nil, fmt.Errorf("exclude pattern %q: %w", p, err)
			}
		}
		switch {
		case strings.HasPrefix(p, "/"):
			m.anchored = append(m.anchored, segs)
		case len(segs) == 1:
			m.names = append(m.names, p)
		default:
			m.suffixes = append(m.suffixes, segs)
		}
	}
	return m, nil
}

// Match reports whether rel, a slash-separated path below a watched
// directory, is excluded.
func (m *Matcher) Match(rel string) bool {
	if m == nil {
		return false
	}
	name := path.Base(rel)
	for _, p := range m.names {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	if len(m.suffixes) == 0 && len(m.anchored) == 0 {
		return false
	}
	segs := strings.Split(rel, "/")
	for _, p := range m.anchored {
		if matchSegs(p, segs) {
			return true
		}
	}
	for _, p := range m.suffixes {
		for i := range segs {
			if matchSegs(p, segs[i:]) {
				return true
			}
		}
	}
	return false
}

// matchSegs matches pattern segments against path segments, "**" taking
// zero or more of them.
func matchSegs(p, s []string) bool {
	for len(p) > 0 {
		if p[0] == "**" {
			if len(p) == 1 {
				return true
			}
			for i := 0; i <= len(s); i++ {
				if matchSegs(p[1:], s[i:]) {
					return true
				}
			}
			return false
		}
		if len(s) == 0 {
			return false
		}
		if ok, _ := path.Match(p[0], s[0]); !ok {
			return false
		}
		p, s = p[1:], s[1:]
	}
	return len(s) == 0
}
