package containercmd

import (
	"strings"
	"testing"

	"github.com/aicloud/gpusuite/internal/container"
)

func TestDiagnose(t *testing.T) {
	e := &env{paths: container.Paths{Data: "/d", Cache: "/c"}}
	for _, tc := range []struct{ out, want string }{
		{"[ERROR] URL https://nvcr.io/proxy_auth returned error code: 401 Unauthorized", "sbuild login"},
		{"mksquashfs: No space left on device", "sbuild prune"},
		{"srun: unrecognized option '--container-image=x'", "pyxis is not loaded"},
		{"manifest unknown", "does not exist"},
		{"something else", "see srun's"},
	} {
		if got := diagnose(tc.out, e); !strings.Contains(got, tc.want) {
			t.Errorf("diagnose(%q) = %q, want %q", tc.out, got, tc.want)
		}
	}
}
