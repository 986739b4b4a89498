package clock

import (
	"sync"
	"testing"
	"time"
)

func TestClock(t *testing.T) {
	t0 := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	c := New(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Fatalf("Now = %v, want %v", got, t0)
	}
	// Readers on other goroutines while the test moves it (go test -race).
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 100 {
				c.Now()
			}
		})
	}
	for range 100 {
		c.Advance(time.Second)
	}
	wg.Wait()
	if got, want := c.Now(), t0.Add(100*time.Second); !got.Equal(want) {
		t.Errorf("after 100 Advance(1s): %v, want %v", got, want)
	}
	c.Set(t0)
	if got := c.Now(); !got.Equal(t0) {
		t.Errorf("after Set: %v, want %v", got, t0)
	}
}
