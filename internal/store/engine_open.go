package store

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	_ "github.com/mattn/go-sqlite3" // database/sql driver "sqlite3"
)

//go:embed migrations/sqlite/*.sql migrations/postgres/*.sql
var migrationFS embed.FS

// ErrLocked means another process holds the writer lock.
var ErrLocked = errors.New("store is locked by another writer")

// ErrNewerSchema means the file was written by a newer gpuacct.
var ErrNewerSchema = errors.New("store schema is newer than this gpuacct")

// Journal modes. Auto picks WAL on a local file system and DELETE on a
// network one (WAL's shared-memory index only works on one host).
const (
	JournalAuto   = "auto"
	JournalWAL    = "wal"
	JournalDelete = "delete"
)

// Options say how to open a store.
type Options struct {
	// Path is the SQLite file; URL, when set, a PostgreSQL database
	// (postgres://…) and Path is not used.
	Path string
	URL  string
	// Wait: a writer that finds another holding the lock waits for it
	// (until ctx ends) instead of failing with ErrLocked, calling
	// OnWait(holder) once each time the holder changes.
	Wait   bool
	OnWait func(holder string)
	// Journal is auto, wal or delete.
	Journal string
	// BusyTimeout is how long a statement waits for a lock.
	BusyTimeout time.Duration
	// ReadOnly opens for reading: no lock, no migrations.
	ReadOnly bool
	// Now stamps the lock file; nil means time.Now.
	Now func() time.Time
	// MaxPages caps the writer's file at this many pages (0: SQLite's
	// own cap). Writes past it fail as on a full disk, which is how the
	// tests fill a disk.
	MaxPages int64
}

// Ledger is an open ledger.
//
// A PostgreSQL writer has one connection, and a Batch holds it from
// Begin to Commit or Rollback: any other method of the same Ledger called
// meanwhile (a read, RecordPass, DropSamplePartitions, Begin) waits for
// it until its ctx ends, and, called from the goroutine that holds the
// batch, never gets it. So callers end a batch before calling anything
// else on its Ledger, and pass a ctx with a deadline to every method of a
// writer that may run beside a batch.
type Ledger struct {
	// db is the store's own: no other package speaks SQL (tests use
	// storetest on Path).
	db *ledgerDB
	// Path is the database file, or the PostgreSQL URL without its
	// password.
	Path string
	// Engine is EngineSQLite or EnginePostgres.
	Engine string
	// Journal is the journal mode in effect (wal or delete; "" on
	// PostgreSQL).
	Journal string
	lock    *os.File
	// locked is whether lock is held, for HoldsLock from another
	// goroutine while Close runs.
	locked atomic.Bool
	pg     *pgEngine // PostgreSQL's pool and writer lock; nil on SQLite
	// now stamps the locks this store takes (Options.Now).
	now func() time.Time
	// markRead, when set (tests), runs after each read of the series
	// fold mark: where a fold can commit between that read and the next.
	markRead func()
}

// The engines.
const (
	EngineSQLite   = "sqlite"
	EnginePostgres = "postgres"
)

// LockPath is the writer lock file of a database.
func LockPath(db string) string { return db + ".lock" }

// Open opens (creating if needed) the store. A writer takes the exclusive
// lock first and applies pending migrations; a second writer gets ErrLocked
// with the holder named.
func Open(ctx context.Context, o Options) (*Ledger, error) {
	if o.URL != "" {
		return openPostgres(ctx, o)
	}
	if o.Path == "" {
		return nil, errors.New("open store: no path given (store.path or store.url)")
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Ledger{Path: o.Path, Engine: EngineSQLite, now: o.Now}
	dir := filepath.Dir(o.Path)
	if o.ReadOnly {
		if _, err := os.Stat(o.Path); err != nil {
			return nil, fmt.Errorf("open store %q: %w", o.Path, err)
		}
	} else {
		if st, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("open store %q: directory: %w", o.Path, err)
		} else if !st.IsDir() {
			return nil, fmt.Errorf("open store %q: %s is not a directory", o.Path, dir)
		}
		lock, err := waitLock(ctx, o, func() (*os.File, error) { return takeLock(LockPath(o.Path), o.Now()) })
		if err != nil {
			return nil, fmt.Errorf("open store %q: %w", o.Path, err)
		}
		s.lock = lock
		s.locked.Store(true)
	}
	mode, err := chooseJournal(o.Journal, dir)
	if err != nil {
		s.unlock()
		return nil, fmt.Errorf("open store %q: %w", o.Path, err)
	}
	s.Journal = mode
	if o.ReadOnly {
		db, err := openReader(ctx, o)
		if err != nil {
			return nil, fmt.Errorf("open store %q: %w", o.Path, translate(err))
		}
		s.db = &ledgerDB{DB: db}
	} else {
		db, err := sql.Open("sqlite3", DSN(o.Path, mode, o.BusyTimeout, o.ReadOnly))
		if err != nil {
			s.unlock()
			return nil, fmt.Errorf("open store %q: %w", o.Path, err)
		}
		// One connection: the writer serialises its own work, and
		// every statement sees the same transaction.
		db.SetMaxOpenConns(1)
		s.db = &ledgerDB{DB: db}
		if err := db.PingContext(ctx); err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %q: %w", o.Path, translate(err))
		}
		// The writer's one connection keeps the cap for its life.
		if o.MaxPages > 0 {
			if _, err := db.ExecContext(ctx, "PRAGMA max_page_count = "+strconv.FormatInt(o.MaxPages, 10)); err != nil {
				s.Close()
				return nil, fmt.Errorf("open store %q: cap at %d pages: %w", o.Path, o.MaxPages, translate(err))
			}
		}
	}
	if o.ReadOnly {
		v, err := s.Version(ctx)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %q: %w", o.Path, err)
		}
		if known := len(mustMigrations(s.Engine)); v > known {
			s.Close()
			return nil, fmt.Errorf("open store %q: schema %d, this gpuacct knows up to %d: %w", o.Path, v, known, ErrNewerSchema)
		}
		return s, nil
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %q: %w", o.Path, translate(err))
	}
	return s, nil
}

// writerCacheKiB is the writer's SQLite page cache.
const writerCacheKiB = 256 << 10

// DSN is the go-sqlite3 connection string: every connection setting lives
// here so that each pooled connection gets the same ones.
func DSN(path, journal string, busy time.Duration, readOnly bool) string {
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(busy.Milliseconds(), 10))
	q.Set("_foreign_keys", "on")
	// FULL: a committed pass survives power loss, which is what lets
	// ingest delete the file it came from.
	q.Set("_synchronous", "FULL")
	if readOnly {
		q.Set("mode", "ro")
	} else {
		q.Set("_journal_mode", strings.ToUpper(journal))
		q.Set("_txlock", "immediate")
		// The writer touches every index of a year-sized ledger all over
		// (job ids and hours arrive in no order): with SQLite's default
		// 2 MiB page cache it reads most pages back from the OS again and
		// again. The cache grows only as pages are used.
		q.Set("_cache_size", strconv.Itoa(-writerCacheKiB))
	}
	return "file:" + (&url.URL{Path: path}).EscapedPath() + "?" + q.Encode()
}

// Network file system magic numbers (statfs f_type) on which WAL is wrong.
var networkFS = map[int64]string{
	0x6969:     "nfs",
	0xFF534D42: "cifs",
	0xFE534D42: "smb2",
	0x517B:     "smb",
	0x00C36400: "ceph",
	0x0BD00BD0: "lustre",
	0x47504653: "gpfs",
	0x65735546: "fuse",
}

func chooseJournal(want, dir string) (string, error) {
	switch strings.ToLower(want) {
	case "", JournalAuto:
		var st syscall.Statfs_t
		if err := syscall.Statfs(dir, &st); err != nil {
			return "", fmt.Errorf("statfs %q to choose the journal mode: %w", dir, err)
		}
		if _, ok := networkFS[int64(st.Type)]; ok {
			return JournalDelete, nil
		}
		return JournalWAL, nil
	case JournalWAL:
		return JournalWAL, nil
	case JournalDelete:
		return JournalDelete, nil
	default:
		return "", fmt.Errorf("journal mode %q is not auto, wal or delete", want)
	}
}

// processStamp names this process to whoever finds its lock held:
// "[what ]pid N on HOST since T". holderGone reads the form back.
func processStamp(what string, now time.Time) string {
	host, _ := os.Hostname()
	stamp := fmt.Sprintf("pid %d on %s since %s", os.Getpid(), host, now.UTC().Format(time.RFC3339))
	if what == "" {
		return stamp
	}
	return what + " " + stamp
}

func takeLock(path string, now time.Time) (*os.File, error) {
	f, holder, err := flockWriter(path, processStamp("", now), false)
	if err != nil {
		return nil, fmt.Errorf("writer lock %q: %w", path, err)
	}
	if f == nil {
		return nil, fmt.Errorf("%w (%s; lock %s): only one gpuacct ingest/serve may write the store", ErrLocked, holder, path)
	}
	return f, nil
}

// flockWriter takes the exclusive flock of the lock file at path and
// writes stamp into it, for whoever finds it held. Held by another: a nil
// file and the holder's stamp ("unknown process" when it left none).
// readOnlyOK takes the lock on a file that cannot be written (a flock
// needs no write access), stamp unwritten: a copy's source may be a
// ledger its reader only reads.
func flockWriter(path, stamp string, readOnlyOK bool) (*os.File, string, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o640)
	writable := err == nil
	if readOnlyOK && (errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS)) {
		f, err = os.Open(path)
	}
	if err != nil {
		return nil, "", err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, "", err
		}
		h := strings.TrimSpace(string(holder))
		if h == "" {
			h = "unknown process"
		}
		return nil, h, nil
	}
	if writable {
		_ = f.Truncate(0)
		_, _ = f.WriteAt([]byte(stamp+"\n"), 0)
	}
	return f, "", nil
}

func (s *Ledger) unlock() {
	s.locked.Store(false)
	if s.lock != nil {
		_ = s.lock.Truncate(0)
		s.lock.Close() // closing drops the flock
		s.lock = nil
	}
}

// Close closes the database and releases the writer lock.
func (s *Ledger) Close() error {
	var err error
	deadline := time.Now().Add(pgCloseWait)
	if s.pg != nil && s.db != nil {
		s.pg.unlock(s.db, deadline)
	}
	if s.db != nil {
		err = s.db.Close()
	}
	if s.pg != nil {
		if perr := s.pg.close(deadline); err == nil {
			err = perr
		}
	}
	s.unlock()
	if err != nil {
		return fmt.Errorf("close store %q: %w", s.Path, err)
	}
	return nil
}

// Version is the schema version (SQLite's PRAGMA user_version,
// PostgreSQL's gpusuite_schema table).
func (s *Ledger) Version(ctx context.Context) (int, error) {
	if s.pg != nil {
		return s.pg.version(ctx, s.db)
	}
	var v int
	if err := s.db.QueryRowContext(ctx, "PRAGMA user_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", translate(err))
	}
	return v, nil
}

type migration struct {
	version int
	name    string
	sql     string
	// step, when set, runs after sql in the same transaction: a change
	// SQL cannot make on both engines (migrationSteps).
	step migrationStep
}

// migrationStep is Go run inside a migration's transaction.
type migrationStep func(ctx context.Context, tx *ledgerTx) error

// migrationSteps are the Go steps by migration number, the same on both
// engines: converting samples to packed rows and folding the series
// into packs need the codecs, and keys to digests sha256, which SQLite
// lacks. (A
// variable for the test of a step that fails.)
var migrationSteps = map[int]migrationStep{21: packSamplesStep, 23: migrateKeysStep, 24: foldSeriesStep}

func mustMigrations(engine string) []migration {
	m, err := migrations(engine)
	if err != nil {
		panic(err) // embedded at build time; a bad name is a build bug
	}
	return m
}

// migrations lists the engine's embedded files NNNN_name.sql in order;
// numbers must run 1, 2, 3... without gaps, and both engines' lists name
// the same versions (TestMigrationsAlike).
func migrations(engine string) ([]migration, error) {
	dir := "migrations/" + engine
	ents, err := fs.ReadDir(migrationFS, dir)
	if err != nil {
		return nil, err
	}
	var out []migration
	for _, e := range ents {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || !strings.HasSuffix(e.Name(), ".sql") {
			return nil, fmt.Errorf("migration %q is not named NNNN_name.sql", e.Name())
		}
		b, err := migrationFS.ReadFile(dir + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(b), step: migrationSteps[v]})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	for i, m := range out {
		if m.version != i+1 {
			return nil, fmt.Errorf("migration %q: expected number %d", m.name, i+1)
		}
	}
	for v := range migrationSteps {
		if v < 1 || v > len(out) {
			return nil, fmt.Errorf("migration step %d: no migration of that number", v)
		}
	}
	return out, nil
}

func (s *Ledger) migrate(ctx context.Context) error {
	ms, err := migrations(s.Engine)
	if err != nil {
		return err
	}
	v, err := s.Version(ctx)
	if err != nil {
		return err
	}
	if v > len(ms) {
		return fmt.Errorf("schema %d, this gpuacct knows up to %d: %w", v, len(ms), ErrNewerSchema)
	}
	for _, m := range ms[v:] {
		tx, err := s.db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("migration %s: %w", m.name, translate(err))
		}
		if _, err := tx.ExecContext(ctx, m.sql); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", m.name, translate(err))
		}
		if m.step != nil {
			if err := m.step(ctx, tx); err != nil {
				tx.Rollback()
				return fmt.Errorf("migration %s: %w", m.name, err)
			}
		}
		if _, err := tx.ExecContext(ctx, s.setVersionSQL(m)); err != nil {
			tx.Rollback()
			return fmt.Errorf("migration %s: %w", m.name, translate(err))
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("migration %s: %w", m.name, translate(err))
		}
	}
	return nil
}

// setVersionSQL records that m is applied, in its transaction.
func (s *Ledger) setVersionSQL(m migration) string {
	if s.pg != nil {
		return fmt.Sprintf("INSERT INTO gpusuite_schema(version, name) VALUES (%d, '%s')", m.version, m.name)
	}
	return fmt.Sprintf("PRAGMA user_version = %d", m.version)
}

// sizeWait bounds how long Size waits for PostgreSQL's answer.
const sizeWait = 5 * time.Second

// Size is DatabaseSize within sizeWait, and 0 when that fails (a server
// that does not answer): callers that must tell a failure from an empty
// ledger use DatabaseSize.
func (s *Ledger) Size() int64 {
	ctx, cancel := context.WithTimeout(context.Background(), sizeWait)
	defer cancel()
	n, _ := s.DatabaseSize(ctx)
	return n
}

// DatabaseSize is the database file's size plus its journal/WAL, in
// bytes (on PostgreSQL, the database's, asked within ctx).
func (s *Ledger) DatabaseSize(ctx context.Context) (int64, error) {
	if s.pg != nil {
		var n int64
		if err := s.db.QueryRowContext(ctx, `SELECT pg_database_size(current_database())`).Scan(&n); err != nil {
			return 0, fmt.Errorf("database size: %w", translate(err))
		}
		return n, nil
	}
	var n int64
	for _, p := range []string{s.Path, s.Path + "-wal", s.Path + "-journal"} {
		if st, err := os.Stat(p); err == nil {
			n += st.Size()
		}
	}
	return n, nil
}

// lockPoll is how often a waiting SQLite writer tries the lock again.
const lockPoll = time.Second

// waitLock runs take until it gets the writer lock: once when o.Wait is
// false, else until ctx ends, telling o.OnWait who holds it.
func waitLock[T any](ctx context.Context, o Options, take func() (T, error)) (T, error) {
	said := ""
	for {
		v, err := take()
		if err == nil || !o.Wait || !errors.Is(err, ErrLocked) {
			return v, err
		}
		if msg := err.Error(); msg != said && o.OnWait != nil {
			o.OnWait(msg)
			said = msg
		}
		t := time.NewTimer(lockPoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return v, fmt.Errorf("wait for the writer lock: %w (%w)", ctx.Err(), err)
		case <-t.C:
		}
	}
}
