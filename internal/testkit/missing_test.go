package testkit

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// ending records how a test ended without ending the real one.
type ending struct {
	testing.TB
	how string
}

func (e *ending) Helper() {}
func (e *ending) Fatalf(format string, args ...any) {
	e.how = "failed"
	panic(e)
}
func (e *ending) Skipf(format string, args ...any) {
	e.how = "skipped"
	panic(e)
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		name, require, want string
	}{
		{name: "outside make test", want: "skipped"},
		{name: "under make test", require: "1", want: "failed"},
		{name: "another value", require: "yes", want: "skipped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := &ending{TB: t}
			func() {
				defer func() {
					if r := recover(); r != nil && r != e {
						panic(r)
					}
				}()
				missing(e, func(k string) string {
					if k == RequireEnv {
						return tc.require
					}
					return ""
				}, "needs %s", "a thing")
			}()
			if diff := cmp.Diff(tc.want, e.how); diff != "" {
				t.Errorf("ended (-want +got):\n%s", diff)
			}
		})
	}
}
