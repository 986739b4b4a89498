package config

import (
	"fmt"
	"path"
	"strings"
	"time"
)

// NFSSync configures nfs-sync, which re-touches files written on this server
// so that other NFS clients see same-second updates (docs/nfs.md).
type NFSSync struct {
	// Dirs are the directories the daemon watches (recursively).
	Dirs []string `toml:"dirs"`
	// Backend is how closes are seen: "auto" (fanotify when possible,
	// else inotify), "fanotify" or "inotify".
	Backend string `toml:"backend"`
	// Window is how long after a file's mtime nfs-sync waits before it
	// touches the file: the server's timestamp granularity plus the most
	// the server's clock may lag behind this one.
	Window Duration `toml:"window"`
	// ProbeFile, when set, names an existing writable file on the share
	// whose timestamps calibrate Window (granularity and clock offset).
	ProbeFile string `toml:"probe_file"`
	// CalibrateEvery repeats the calibration; 0 calibrates once at start.
	CalibrateEvery Duration `toml:"calibrate_every"`
	// Settle is the quiet time after a file's last close before it is
	// looked at; closes within it belong to one burst.
	Settle Duration `toml:"settle"`
	// Exclude lists globs of files never touched: a pattern without "/"
	// matches the file name, one with "/" matches trailing path segments
	// ("**" spans any number of them), one starting with "/" is anchored
	// at the watched directory.
	Exclude []string `toml:"exclude"`
	// MaxFixesPerSecond caps touches per second; 0 means no cap.
	MaxFixesPerSecond int `toml:"max_fixes_per_second"`
	// Workers is the number of touches in flight at once.
	Workers int `toml:"workers"`
	// MaxPending bounds the files waiting for their fix; further closes
	// are dropped and counted.
	MaxPending int `toml:"max_pending"`
	// MaxWatches caps inotify watches (0: the kernel's limit only).
	MaxWatches int `toml:"max_watches"`
	// AsOwner retries a touch refused to root (root_squash) with the
	// file owner's uid and gid.
	AsOwner bool `toml:"as_owner"`
	// RescanLookback is how far back a rescan after an event-queue
	// overflow looks for changed files.
	RescanLookback Duration `toml:"rescan_lookback"`
	// MetricsListen is the address of the /metrics endpoint; empty
	// disables it.
	MetricsListen string `toml:"metrics_listen"`
	// WebConfigFile is a Prometheus web configuration file (TLS, basic
	// auth, headers: the exporter toolkit's web-config.yml) for
	// /metrics; empty serves plain HTTP.
	WebConfigFile string `toml:"web_config_file"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `toml:"log_level"`
}

func defaultNFSSync() NFSSync {
	return NFSSync{
		Dirs:              []string{"/data"},
		Backend:           "auto",
		Window:            Dur(1100 * time.Millisecond),
		CalibrateEvery:    Dur(10 * time.Minute),
		Settle:            Dur(100 * time.Millisecond),
		Exclude:           []string{"*.swp", "*.swx", ".nfs*", ".git/objects/**"},
		MaxFixesPerSecond: 2000,
		Workers:           4,
		MaxPending:        100000,
		AsOwner:           true,
		RescanLookback:    Dur(30 * time.Second),
		MetricsListen:     "127.0.0.1:9465",
		LogLevel:          "info",
	}
}

func (n *NFSSync) validate() error {
	if len(n.Dirs) == 0 {
		return fmt.Errorf("key \"nfssync.dirs\": must name at least one directory")
	}
	for _, d := range n.Dirs {
		if !strings.HasPrefix(d, "/") {
			return fmt.Errorf("key \"nfssync.dirs\": %q is not an absolute path", d)
		}
	}
	switch n.Backend {
	case "auto", "fanotify", "inotify":
	default:
		return fmt.Errorf("key \"nfssync.backend\": %q is not auto, fanotify or inotify", n.Backend)
	}
	if n.Window.Duration <= 0 || n.Window.Duration > time.Minute {
		return fmt.Errorf("key \"nfssync.window\": %s is outside (0s, 1m]; the default 1.1s suits a server with 1 s timestamps", n.Window.Duration)
	}
	if n.ProbeFile != "" && !strings.HasPrefix(n.ProbeFile, "/") {
		return fmt.Errorf("key \"nfssync.probe_file\": %q is not an absolute path", n.ProbeFile)
	}
	if n.CalibrateEvery.Duration < 0 {
		return fmt.Errorf("key \"nfssync.calibrate_every\": must not be negative")
	}
	if n.Settle.Duration < 0 || n.Settle.Duration > time.Minute {
		return fmt.Errorf("key \"nfssync.settle\": %s is outside [0s, 1m]", n.Settle.Duration)
	}
	for _, g := range n.Exclude {
		if err := checkGlob(g); err != nil {
			return fmt.Errorf("key \"nfssync.exclude\": %w", err)
		}
	}
	if n.MaxFixesPerSecond < 0 {
		return fmt.Errorf("key \"nfssync.max_fixes_per_second\": %d is negative; use 0 for no cap", n.MaxFixesPerSecond)
	}
	if n.Workers < 1 || n.Workers > 256 {
		return fmt.Errorf("key \"nfssync.workers\": %d is outside 1..256", n.Workers)
	}
	if n.MaxPending < 1 {
		return fmt.Errorf("key \"nfssync.max_pending\": must be at least 1")
	}
	if n.MaxWatches < 0 {
		return fmt.Errorf("key \"nfssync.max_watches\": %d is negative; use 0 for the kernel's limit", n.MaxWatches)
	}
	if n.RescanLookback.Duration < 0 {
		return fmt.Errorf("key \"nfssync.rescan_lookback\": must not be negative")
	}
	if err := checkLogLevel("nfssync.log_level", n.LogLevel); err != nil {
		return err
	}
	return nil
}

// checkGlob reports a pattern path.Match would reject.
func checkGlob(g string) error {
	if g == "" || g == "/" {
		return fmt.Errorf("empty pattern")
	}
	for _, seg := range strings.Split(strings.TrimPrefix(g, "/"), "/") {
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", g, err)
		}
	}
	return nil
}
