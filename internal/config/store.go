package config

import (
	"fmt"
	"strings"
	"time"
)

// Store configures the accounting database (docs/store.md).
type Store struct {
	// Path is the SQLite file, used when URL is empty.
	Path string `toml:"path"`
	// URL, when set, is a PostgreSQL database (postgres://…) that holds
	// the ledger instead of the SQLite file at Path.
	URL string `toml:"url"`
	// JournalMode is auto (WAL on a local file system, DELETE on NFS and
	// other network file systems), wal or delete.
	JournalMode string `toml:"journal_mode"`
	// BusyTimeout is how long a statement waits for another process's lock.
	BusyTimeout Duration `toml:"busy_timeout"`
	// SampleRetention is how long raw samples are kept; rollups and job
	// figures are kept for good.
	SampleRetention Duration `toml:"sample_retention"`
	// SeriesRetention is how long the per-5-minute series folded from
	// the samples (mean, peak and idle share of a job on a GPU) are kept;
	// 0 prunes them with the samples. Kept longer, a job's page still
	// draws its series once its samples are gone, for about a twentieth of
	// their bytes at 10 s.
	SeriesRetention Duration `toml:"series_retention"`
}

// SeriesKept is how long the folded series are kept: SeriesRetention,
// or SampleRetention when that is 0.
func (s *Store) SeriesKept() time.Duration {
	return max(s.SeriesRetention.Duration, s.SampleRetention.Duration)
}

// Ingest configures gpuacct ingest and gpuacct serve.
type Ingest struct {
	// Incoming holds one directory per node: <incoming>/<node>/.
	Incoming string `toml:"incoming"`
	// Quarantine receives bad and refused files, each with a .reason.
	Quarantine string `toml:"quarantine"`
	// Archive receives ingested files when Keep is "archive".
	Archive string `toml:"archive"`
	// Keep is what happens to an ingested file: archive or delete.
	Keep string `toml:"keep"`
	// ArchiveRetention prunes archived files older than this; 0 keeps them.
	ArchiveRetention Duration `toml:"archive_retention"`
	// ServiceUser owns the incoming files; others' files are refused.
	// Empty means the user ingest runs as.
	ServiceUser string `toml:"service_user"`
	// MaxFileSize is the largest file taken in, in bytes.
	MaxFileSize int64 `toml:"max_file_size"`
	// BatchRecords is how many records one transaction takes at most.
	BatchRecords int `toml:"batch_records"`
	// Interval is how often serve polls the node directories (fsnotify
	// wakes it sooner when it works on the file system).
	Interval Duration `toml:"interval"`
	// Watch uses fsnotify in addition to polling.
	Watch bool `toml:"watch"`
	// Grace is how long an open job may show nothing before it is closed
	// from sacct or, failing that, at its last sample (flagged estimated).
	Grace Duration `toml:"grace"`
	// Sacct is the sacct program; empty never asks Slurm.
	Sacct string `toml:"sacct"`
	// Sacctmgr is the sacctmgr program, for Slurm's account tree, node
	// events and reservations; empty never asks Slurm. SacctTimeout
	// bounds its calls too.
	Sacctmgr string `toml:"sacctmgr"`
	// SacctTimeout bounds one sacct call.
	SacctTimeout Duration `toml:"sacct_timeout"`
	// MaxFuture refuses records dated further ahead than this.
	MaxFuture Duration `toml:"max_future"`
	// MetricsListen is the address of /metrics; empty disables it.
	MetricsListen string `toml:"metrics_listen"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `toml:"log_level"`
}

func defaultStore() Store {
	return Store{
		Path:            "/data/gpusuite/gpuacct.db",
		JournalMode:     "auto",
		BusyTimeout:     Dur(10 * time.Second),
		SampleRetention: Dur(30 * 24 * time.Hour),
	}
}

func defaultIngest() Ingest {
	return Ingest{
		Incoming:         "/data/gpusuite/incoming",
		Quarantine:       "/data/gpusuite/quarantine",
		Archive:          "/data/gpusuite/archive",
		Keep:             "archive",
		ArchiveRetention: Dur(14 * 24 * time.Hour),
		MaxFileSize:      64 << 20,
		BatchRecords:     50000,
		Interval:         Dur(30 * time.Second),
		Watch:            true,
		Grace:            Dur(15 * time.Minute),
		Sacct:            "sacct",
		Sacctmgr:         "sacctmgr",
		SacctTimeout:     Dur(10 * time.Second),
		MaxFuture:        Dur(time.Hour),
		MetricsListen:    "127.0.0.1:9466",
		LogLevel:         "info",
	}
}

// Location is where the ledger is: URL when set, else Path. It may hold
// a password: print it through store.RedactURL.
func (s *Store) Location() string {
	if s.URL != "" {
		return s.URL
	}
	return s.Path
}

func (s *Store) validate() error {
	// The value is not repeated: a mistyped scheme may still carry a
	// password.
	if s.URL != "" && !strings.HasPrefix(s.URL, "postgres://") && !strings.HasPrefix(s.URL, "postgresql://") {
		return fmt.Errorf("key \"store.url\": must start with postgres:// or postgresql:// (e.g. \"postgres://gpusuite@db.example.org/gpusuite\"), or be \"\" for the SQLite file at store.path")
	}
	if !strings.HasPrefix(s.Path, "/") {
		return fmt.Errorf("key \"store.path\": %q is not an absolute path", s.Path)
	}
	switch s.JournalMode {
	case "auto", "wal", "delete":
	default:
		return fmt.Errorf("key \"store.journal_mode\": %q is not auto, wal or delete", s.JournalMode)
	}
	if s.BusyTimeout.Duration <= 0 {
		return fmt.Errorf("key \"store.busy_timeout\": must be positive")
	}
	if s.SampleRetention.Duration < time.Hour {
		return fmt.Errorf("key \"store.sample_retention\": %s is under 1h", s.SampleRetention.Duration)
	}
	if r := s.SeriesRetention.Duration; r != 0 && r < s.SampleRetention.Duration {
		return fmt.Errorf("key \"store.series_retention\": %s is under store.sample_retention (%s); use 0 to prune the series with the samples", r, s.SampleRetention.Duration)
	}
	return nil
}

func (i *Ingest) validate() error {
	for _, p := range []struct{ key, val string }{
		{"ingest.incoming", i.Incoming}, {"ingest.quarantine", i.Quarantine}, {"ingest.archive", i.Archive},
	} {
		if !strings.HasPrefix(p.val, "/") {
			return fmt.Errorf("key %q: %q is not an absolute path", p.key, p.val)
		}
	}
	switch i.Keep {
	case "archive", "delete":
	default:
		return fmt.Errorf("key \"ingest.keep\": %q is not archive or delete", i.Keep)
	}
	if i.ArchiveRetention.Duration < 0 {
		return fmt.Errorf("key \"ingest.archive_retention\": must not be negative; use 0 to keep archived files")
	}
	if i.MaxFileSize < 1024 {
		return fmt.Errorf("key \"ingest.max_file_size\": %d bytes is under 1024", i.MaxFileSize)
	}
	if i.BatchRecords < 1 {
		return fmt.Errorf("key \"ingest.batch_records\": must be at least 1")
	}
	if i.Interval.Duration < 100*time.Millisecond {
		return fmt.Errorf("key \"ingest.interval\": %s is under 100ms", i.Interval.Duration)
	}
	if i.Grace.Duration <= 0 {
		return fmt.Errorf("key \"ingest.grace\": must be positive")
	}
	if i.SacctTimeout.Duration <= 0 {
		return fmt.Errorf("key \"ingest.sacct_timeout\": must be positive")
	}
	if i.MaxFuture.Duration < 0 {
		return fmt.Errorf("key \"ingest.max_future\": must not be negative")
	}
	if err := checkLogLevel("ingest.log_level", i.LogLevel); err != nil {
		return err
	}
	return nil
}
