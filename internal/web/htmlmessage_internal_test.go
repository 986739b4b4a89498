package web

import (
	"errors"
	"html/template"
	"testing"

	"github.com/aicloud/gpusuite/internal/i18n"
)

type typed string

func (t typed) String() string { return string(t) }

// TestHTMLMessage: TH escapes every argument a user may have typed,
// whatever its type, and leaves numbers to the printer.
func TestHTMLMessage(t *testing.T) {
	tr := i18n.Plain()
	for _, c := range []struct {
		name string
		key  string
		args []any
		want template.HTML
	}{
		{"no argument", "Slurm's next start", nil, "Slurm's next start"},
		{"string", "Slurm's queue at %s", []any{"<b>"}, "Slurm's queue at &lt;b&gt;"},
		{"stringer", "Slurm's queue at %s", []any{typed("<script>x</script>")}, "Slurm's queue at &lt;script&gt;x&lt;/script&gt;"},
		{"error", "Slurm's queue at %v", []any{errors.New("a&b")}, "Slurm's queue at a&amp;b"},
		{"number", "%d jobs", []any{3}, "3 jobs"},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := htmlMessage(tr, c.key, c.args...); got != c.want {
				t.Errorf("htmlMessage(%q, %v) = %q, want %q", c.key, c.args, got, c.want)
			}
		})
	}
}
