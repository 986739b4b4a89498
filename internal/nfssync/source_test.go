package nfssync

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// TestSourceClose: closing a source ends its Run, which returns nil, and
// a second Close is harmless. auto is fanotify where this machine allows
// it, inotify where not.
func TestSourceClose(t *testing.T) {
	for _, kind := range []string{"inotify", "auto"} {
		t.Run(kind, func(t *testing.T) {
			env := sourceEnv{log: discardLogger(), metrics: NewMetrics(prometheus.NewRegistry()), maxWatches: 100, newDirFile: func(string) {}}
			src, err := openSource(kind, []string{t.TempDir()}, env)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- src.Run(context.Background(), func(string) {}, func() {}) }()
			if err := src.Close(); err != nil {
				t.Fatalf("Close: %v", err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("Run after Close: %v", err)
				}
			case <-time.After(60 * time.Second):
				t.Fatal("Run still running 60s after Close")
			}
			if err := src.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
		})
	}
}
