// Package logs holds what tests need to read a log while it is being
// written: by a logger on another goroutine, or by a subprocess.
package logs

import (
	"strings"
	"sync"
)

// Buffer collects what is written to it, safe for one writer and readers
// on other goroutines at once.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is everything written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
