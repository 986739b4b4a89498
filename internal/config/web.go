package config

import (
	"fmt"
	"net"
	"time"
)

// Web configures the dashboard and JSON API that gpuacct serve offers
// (docs/dashboard.md, docs/api.md).
type Web struct {
	// Enabled serves the dashboard and /api/v1/.
	Enabled bool `toml:"enabled"`
	// Listen is the dashboard's own address; empty shares the /metrics
	// listener (ingest.metrics_listen).
	Listen string `toml:"listen"`
	// MaxAge is the Cache-Control max-age of pages and API answers.
	MaxAge Duration `toml:"max_age"`
	// Concurrent is how many pages and API requests run at once; more
	// wait two seconds, then get 503 with Retry-After.
	Concurrent int `toml:"concurrent"`
	// Timeout is each page's and API request's deadline.
	Timeout Duration `toml:"timeout"`
	// MaxStreams is how many live board event streams are open at once;
	// past it a new one gets 503 (each costs a goroutine and its writes).
	MaxStreams int `toml:"max_streams"`
}

func defaultWeb() Web {
	return Web{Enabled: true, MaxAge: Dur(30 * time.Second), Concurrent: 4, Timeout: Dur(30 * time.Second), MaxStreams: 1000}
}

func (w *Web) validate() error {
	if w.Listen != "" {
		if _, _, err := net.SplitHostPort(w.Listen); err != nil {
			return fmt.Errorf("key \"web.listen\": %q is not host:port: %w", w.Listen, err)
		}
	}
	if w.MaxAge.Duration < 0 || w.MaxAge.Duration > 24*time.Hour {
		return fmt.Errorf("key \"web.max_age\": %s is outside 0s..24h", w.MaxAge.Duration)
	}
	if w.Concurrent < 1 || w.Concurrent > 64 {
		return fmt.Errorf("key \"web.concurrent\": %d is outside 1..64", w.Concurrent)
	}
	if w.Timeout.Duration < time.Second || w.Timeout.Duration > 10*time.Minute {
		return fmt.Errorf("key \"web.timeout\": %s is outside 1s..10m", w.Timeout.Duration)
	}
	if w.MaxStreams < 1 || w.MaxStreams > 100000 {
		return fmt.Errorf("key \"web.max_streams\": %d is outside 1..100000", w.MaxStreams)
	}
	return nil
}
