package container

import (
	"fmt"

	"github.com/aicloud/gpusuite/internal/cli/exitcode"
)

// usagef marks bad input on the command line: the binaries exit 2.
func usagef(format string, a ...any) error {
	return &exitcode.UsageError{Err: fmt.Errorf(format, a...)}
}
