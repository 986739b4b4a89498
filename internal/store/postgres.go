package store

import (
	"context"
	"errors"
	"fmt"
	"github.com/aicloud/gpusuite/internal/store/dialect"
	"net/url"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// The writer lock on PostgreSQL is a session advisory lock, held on a
// connection of its own for the writer's life: PostgreSQL drops it when
// that session ends, however the process died (a moment after, when the
// server notices the closed connection; Close unlocks first), so a
// waiting writer takes over. Its two keys are fixed ("gpus", 1): one ledger per
// database (advisory locks are the database's, and so is the holder
// looked up).
const (
	pgLockClass = 0x67707573
	pgLockObj   = 1
)

// pgConns bounds a PostgreSQL pool (invariant 9), as ReadConns does
// SQLite's.
const pgConns = 4

// pgEngine is what a PostgreSQL store holds besides its database/sql
// pool: the pgx pool under it (COPY) and the writer's lock session.
type pgEngine struct {
	pool *pgxpool.Pool
	lock *pgx.Conn // nil for a reader
}

// pgCloseWait bounds how long Close waits for the pool's connections
// to come back: a batch never committed or rolled back (a caller's bug)
// must not hang the process's exit.
const pgCloseWait = 5 * time.Second

func (e *pgEngine) close() error {
	if e.lock != nil {
		// Unlock before closing: the server ends a closed session, and
		// frees its lock, only some time after, and a writer opened
		// right after this Close must find the lock free.
		ctx, cancel := context.WithTimeout(context.Background(), pgCloseWait)
		_, _ = e.lock.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, pgLockClass, pgLockObj)
		_ = e.lock.Close(ctx)
		cancel()
		e.lock = nil
	}
	done := make(chan struct{})
	go func() {
		e.pool.Close()
		close(done)
	}()
	t := time.NewTimer(pgCloseWait)
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return errors.New("connections still in use after 5s (a batch left open)")
	}
}

// RedactURL is u without its password, for logs and messages: the URL's
// user password and a password= parameter, also in a URL that does not
// parse (a typo must not print the password). Anything else, a SQLite
// path included, is returned as it is.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err == nil && p.Scheme != "" {
		changed := false
		if _, ok := p.User.Password(); ok {
			p.User, changed = url.UserPassword(p.User.Username(), redacted), true
		}
		if q := p.Query(); q.Has("password") {
			q.Set("password", redacted)
			p.RawQuery, changed = q.Encode(), true
		}
		if changed {
			return p.String()
		}
		return u
	}
	if i := strings.Index(u, "://"); i >= 0 {
		auth := u[i+3:]
		if at := strings.LastIndex(auth, "@"); at >= 0 {
			if c := strings.Index(auth[:at], ":"); c >= 0 {
				u = u[:i+3] + auth[:c+1] + redacted + auth[at:]
			}
		}
	}
	return redactPasswordParams(u)
}

// redacted stands for a password in what the store prints.
const redacted = "xxxxx"

// redactPasswordParams hides the value of each password=value setting
// in s, a URL's query or a key=value connection string, the value bare
// or quoted.
func redactPasswordParams(s string) string {
	var b strings.Builder
	for {
		i := indexFold(s, "password")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		j := i + len("password")
		for j < len(s) && s[j] == ' ' {
			j++
		}
		if j == len(s) || s[j] != '=' {
			b.WriteString(s[:j])
			s = s[j:]
			continue
		}
		j++
		for j < len(s) && s[j] == ' ' {
			j++
		}
		k := j
		if k < len(s) && s[k] == '\'' {
			for k++; k < len(s) && s[k] != '\''; k++ {
				if s[k] == '\\' {
					k++
				}
			}
			k = min(k+1, len(s))
		} else {
			for k < len(s) && s[k] != ' ' && s[k] != '&' {
				k++
			}
		}
		b.WriteString(s[:j])
		b.WriteString(redacted)
		s = s[k:]
	}
}

// indexFold is strings.Index of the ASCII word w in s, ignoring case.
func indexFold(s, w string) int {
	for i := 0; i+len(w) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(w)], w) {
			return i
		}
	}
	return -1
}

// IsPostgresURL reports whether u names a PostgreSQL database.
func IsPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// holderName is how a writer names itself to PostgreSQL
// (application_name), so that a waiting one can say who holds the lock.
func holderName(now time.Time) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("gpuacct pid %d on %s since %s", os.Getpid(), host, now.UTC().Format(time.RFC3339))
}

func openPostgres(ctx context.Context, o Options) (*Store, error) {
	name := RedactURL(o.URL)
	if !IsPostgresURL(o.URL) {
		return nil, fmt.Errorf("open store %q: store.url must start with postgres:// or postgresql://", name)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = 10 * time.Second
	}
	cfg, err := pgxpool.ParseConfig(o.URL)
	if err != nil {
		return nil, fmt.Errorf("open store %q: %w", name, err)
	}
	cfg.MaxConns = pgConns
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = o.BusyTimeout
	}
	rt := cfg.ConnConfig.RuntimeParams
	rt["application_name"] = holderName(o.Now())
	// A statement stuck on a row lock fails after the busy timeout, as
	// SQLite's does; reports read UTC like the rest of the ledger.
	rt["lock_timeout"] = fmt.Sprint(o.BusyTimeout.Milliseconds())
	rt["TimeZone"] = "UTC"
	if o.ReadOnly {
		rt["default_transaction_read_only"] = "on"
	}
	s := &Store{Path: name, Engine: EnginePostgres}
	e := &pgEngine{}
	if !o.ReadOnly {
		lock, err := waitLock(ctx, o, func() (*pgx.Conn, error) { return pgTakeLock(ctx, cfg.ConnConfig, o.BusyTimeout) })
		if err != nil {
			return nil, fmt.Errorf("open store %q: %w", name, err)
		}
		e.lock = lock
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		if e.lock != nil {
			_ = e.lock.Close(ctx)
		}
		return nil, fmt.Errorf("open store %q: %w", name, translate(err))
	}
	e.pool = pool
	s.pg = e
	s.db = &ledgerDB{DB: stdlib.OpenDBFromPool(pool), pg: &dialect.Postgres{}}
	s.db.SetMaxOpenConns(pgConns)
	if err := s.db.PingContext(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %q: %w", name, translate(err))
	}
	if o.ReadOnly {
		v, err := s.Version(ctx)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %q: %w", name, err)
		}
		if v == 0 {
			s.Close()
			return nil, fmt.Errorf("open store %q: no gpusuite ledger in this database (start gpuacct serve or ingest once to make one): %w", name, ErrNotLedger)
		}
		if known := len(mustMigrations(EnginePostgres)); v > known {
			s.Close()
			return nil, fmt.Errorf("open store %q: schema %d, this gpuacct knows up to %d: %w", name, v, known, ErrNewerSchema)
		}
		return s, nil
	}
	if _, err := s.db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS gpusuite_schema (
 version BIGINT PRIMARY KEY, name TEXT NOT NULL, applied TIMESTAMPTZ NOT NULL DEFAULT now())`); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %q: %w", name, translate(err))
	}
	if err := s.migrate(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %q: %w", name, translate(err))
	}
	return s, nil
}

// pgGonePoll is how often a writer looks again at a lock whose holder's
// process is gone.
const pgGonePoll = 100 * time.Millisecond

// pgTakeLock opens the lock session and takes the writer lock, or says
// who holds it (ErrLocked). A holder that is a gpuacct of this host whose
// process is gone (killed) is a session the server has not yet ended: it
// does when it notices the closed connection, a moment later, so that
// one is waited for, up to wait.
func pgTakeLock(ctx context.Context, cc *pgx.ConnConfig, wait time.Duration) (*pgx.Conn, error) {
	c, err := pgx.ConnectConfig(ctx, cc.Copy())
	if err != nil {
		return nil, fmt.Errorf("writer lock: %w", translate(err))
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		var ok bool
		if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, pgLockClass, pgLockObj).Scan(&ok); err != nil {
			_ = c.Close(ctx)
			return nil, fmt.Errorf("writer lock: %w", translate(err))
		}
		if ok {
			return c, nil
		}
		var app, backend string
		err = c.QueryRow(ctx, `SELECT coalesce(a.application_name, ''), 'backend ' || a.pid || coalesce(' from ' || host(a.client_addr), '')
 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2
 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) LIMIT 1`,
			pgLockClass, pgLockObj).Scan(&app, &backend)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			_ = c.Close(ctx)
			return nil, fmt.Errorf("writer lock: %w", translate(err))
		}
		gone := holderGone(app)
		if gone {
			t := time.NewTimer(pgGonePoll)
			select {
			case <-t.C:
				continue
			case <-wctx.Done():
				t.Stop()
			}
		}
		_ = c.Close(ctx)
		holder := "unknown process"
		if app != "" || backend != "" {
			holder = app + " (" + backend + ")"
		}
		if gone {
			holder += ", whose process is gone: the server frees its lock when it notices, try again shortly"
		}
		return nil, fmt.Errorf("%w (%s; advisory lock %d/%d): only one gpuacct ingest/serve may write the store", ErrLocked, holder, pgLockClass, pgLockObj)
	}
}

// holderGone reports whether app, a lock holder's application_name
// (holderName), names a process of this host that no longer exists.
func holderGone(app string) bool {
	var pid int
	var host string
	if _, err := fmt.Sscanf(app, "gpuacct pid %d on %s since", &pid, &host); err != nil || pid <= 0 || pid == os.Getpid() {
		return false
	}
	if h, err := os.Hostname(); err != nil || h != host {
		return false
	}
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}

// version reads gpusuite_schema; a database without it is version 0.
func (e *pgEngine) version(ctx context.Context, db *ledgerDB) (int, error) {
	var reg *string
	if err := db.QueryRowContext(ctx, `SELECT to_regclass('gpusuite_schema')::text`).Scan(&reg); err != nil {
		return 0, fmt.Errorf("read schema version: %w", translate(err))
	}
	if reg == nil {
		return 0, nil
	}
	var v int
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM gpusuite_schema`).Scan(&v); err != nil {
		return 0, fmt.Errorf("read schema version: %w", translate(err))
	}
	return v, nil
}

// HoldsLock reports whether this writer still holds its lock: false once
// its lock session is gone (the server restarted, the connection cut),
// when another writer may have taken over and this one must stop.
func (s *Store) HoldsLock(ctx context.Context) bool {
	if s.pg == nil {
		return s.lock != nil
	}
	if s.pg.lock == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.pg.lock.Ping(ctx) == nil
}
