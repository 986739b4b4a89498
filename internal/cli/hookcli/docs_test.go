package hookcli

import (
	"bytes"
	"flag"
	"testing"

	"github.com/aicloud/gpusuite/internal/hook"
	"github.com/aicloud/gpusuite/internal/record"
	"github.com/aicloud/gpusuite/internal/testkit/cmdline"
)

var update = flag.Bool("update", false, "rewrite packaging/man from the hooks' --help")

// TestManPages keeps packaging/man/prolog.1 and epilog.1 the hooks' own
// --help; the generator is test code, so the hooks link none of it.
func TestManPages(t *testing.T) {
	for _, kind := range []record.Kind{record.JobStart, record.JobEnd} {
		name := hook.Name(kind)
		var out, errb bytes.Buffer
		if code := Main(kind, []string{name, "--help"}, &out, &errb, func(string) string { return "" }); code != 0 {
			t.Fatalf("%s --help: exit %d", name, code)
		}
		cmdline.Golden(t, "../../../packaging/man/"+name+".1", cmdline.ManFromHelp(name, errb.String()), *update)
	}
}
