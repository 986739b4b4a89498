package container

import "fmt"

// UsageError marks bad input on the command line: the binaries exit 2.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usagef(format string, a ...any) error { return &UsageError{fmt.Errorf(format, a...)} }
