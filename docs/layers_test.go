package docs

import (
	"regexp"
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/testkit"
)

const module = "github.com/aicloud/gpusuite/"

// listed is the order in which docs/architecture.md's package lines name
// the packages, lowest first.
func listed(page string) []string {
	_, body, _ := strings.Cut(page, "## Packages, by layer")
	line := regexp.MustCompile("^- ((?:`[^`]+`(?:, )?)+)")
	name := regexp.MustCompile("`([^`]+)`")
	var out []string
	for _, l := range strings.Split(body, "\n") {
		if m := line.FindStringSubmatch(l); m != nil {
			for _, n := range name.FindAllStringSubmatch(m[1], -1) {
				out = append(out, n[1])
			}
		}
	}
	return out
}

// TestLayers: architecture.md lists the packages lowest first, and every
// import of a package's own code (tests aside) names one listed above it,
// so no arrow climbs back up the page. A new package or a new import that
// climbs fails here: move the line, or the code.
func TestLayers(t *testing.T) {
	order := listed(readDoc(t, "architecture.md"))
	pos := map[string]int{}
	for i, p := range order {
		pos[p] = i
	}
	for _, tags := range []string{"", "simulated"} {
		for _, p := range testkit.GoList(t, "-tags", tags, module+"...") {
			from := strings.TrimPrefix(p.ImportPath, module)
			at, ok := pos[from]
			if !ok {
				t.Errorf("package %s is not listed in docs/architecture.md", from)
				continue
			}
			for _, imp := range p.Imports {
				to, ours := strings.CutPrefix(imp, module)
				if !ours {
					continue
				}
				if pos[to] >= at {
					t.Errorf("tags %q: %s imports %s, listed below it in docs/architecture.md: the arrow climbs", tags, from, to)
				}
			}
		}
	}
}

// TestListedFindsClimb: the page parser reads the lines' order, and an
// import of a package listed lower is the climb TestLayers reports.
func TestListedFindsClimb(t *testing.T) {
	page := "# x\n## Packages, by layer\n\n- `internal/record`: a\n- `prolog`, `epilog`: b\n\n**Tests**\n- `docs`: c\n"
	got := listed(page)
	want := []string{"internal/record", "prolog", "epilog", "docs"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("listed = %v, want %v", got, want)
	}
}
