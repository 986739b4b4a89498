package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/aicloud/gpusuite/internal/store/dialect"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
)

// The writer lock on PostgreSQL is a session advisory lock, taken on
// the writer's one connection, the same session its batches write on:
// PostgreSQL drops it when that session ends, however the process died
// (a moment after, when the server notices the closed connection; Close
// unlocks first), so a waiting writer takes over, and a batch on a
// session that no longer holds it refuses to write (ErrLockLost): the
// lock fences the writes, it does not merely announce the writer. Its two
// keys are fixed ("gpus", 1): one ledger per database (advisory locks
// are the database's, and so is the holder looked up).
const (
	pgLockClass = 0x67707573
	pgLockObj   = 1
)

// pgConns bounds a reader's PostgreSQL pool (invariant 9), as ReadConns
// does SQLite's. A writer has one connection, as SQLite's writer has.
const pgConns = 4

// pgForever is a writer connection's lifetime and idle limit: the pool
// must never replace the session that holds the lock on its own.
const pgForever = 100 * 365 * 24 * time.Hour

// pgSameSession tells whether the session running it is the one that
// took the writer lock (its backend pid, and its start in microseconds,
// so that a pid the server reused is not taken for it). That session
// holds the lock for as long as it lives (the writer unlocks only in
// Close), so this answers as a lookup in pg_locks would, at the price of
// SELECT 1: pg_locks reads every lock of the server, under all the lock
// manager's partition locks (8 ms beside a session holding 20 000 locks,
// against 0.1 ms).
const pgSameSession = `SELECT EXISTS (SELECT 1 FROM pg_stat_get_activity(pg_backend_pid())
 WHERE pid = ? AND CAST(extract(epoch FROM backend_start) * 1000000 AS INTEGER) = ?)`

// pgSessionStart is the start of the session running it, as pgSameSession
// compares it.
const pgSessionStart = `(SELECT CAST(extract(epoch FROM backend_start) * 1000000 AS BIGINT) FROM pg_stat_get_activity(pg_backend_pid()))`

// pgSession is the backend that took the writer lock.
type pgSession struct {
	pid     uint32
	started int64
}

// pgEngine is what a PostgreSQL store holds besides its database/sql
// pool: the pgx pool under it (COPY) and, for a writer, the turn on its
// one connection.
type pgEngine struct {
	pool *pgxpool.Pool
	// turn is a writer's (nil for a reader): a Batch holds it from Begin
	// to its end, HoldsLock and Close take it for their own statement.
	turn chan struct{}
	// held is what the last lock check found; HoldsLock says it while a
	// batch has the connection (the batch checks for itself).
	held atomic.Bool
	// pid and started are the backend that took the lock
	// (pgSameSession; tests terminate it).
	pid     uint32
	started int64
	// now is Options.Now; dropAgain is when DropSamplePartitions may
	// next try after a drop that timed out (the turn guards it).
	now       func() time.Time
	dropAgain time.Time
	// descs are the writer's prepared statements (engine_pipeline_pg.go); its
	// batches take turns with them.
	descs stmtDescs
}

// ErrLockLost means the writer's session no longer holds the writer lock
// (the server ended it, the connection was cut, and the pool made a new
// one): another writer may hold the lock now, so nothing is written. It
// is also ErrLocked: the ledger is another writer's. The store is of no
// more use as a writer: close it and open again.
var ErrLockLost = fmt.Errorf("writer lock lost: this writer's database session ended and another writer may hold the lock (%w)", ErrLocked)

// check runs the lock check (lockCheck) on the writer's session (a
// batch's transaction, or the pool's one connection) and remembers the
// answer.
func (e *pgEngine) check(ctx context.Context, on interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) error {
	q, pid, started := e.lockCheck()
	var ok bool
	if err := on.QueryRowContext(ctx, q, pid, started).Scan(&ok); err != nil {
		return fmt.Errorf("check writer lock: %w", translate(err))
	}
	e.held.Store(ok)
	if !ok {
		return ErrLockLost
	}
	return nil
}

// lockCheck is the statement and arguments that tell whether the
// session running them holds the writer lock.
func (e *pgEngine) lockCheck() (string, int64, int64) {
	return pgSameSession, int64(e.pid), e.started
}

// take waits for the writer's connection (a writer only), and returns
// the func that gives it back.
func (e *pgEngine) take(ctx context.Context) (func(), error) {
	select {
	case e.turn <- struct{}{}:
		return sync.OnceFunc(func() { <-e.turn }), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// pgCloseWait bounds how long Close waits, unlock and the pool's close
// together: a batch never committed or rolled back (a caller's bug) must
// not hang the process's exit.
const pgCloseWait = 5 * time.Second

// unlock frees a writer's lock before its pool closes: the server ends a
// closed session, and frees its lock, only some time after, and a writer
// opened right after this Close must find the lock free. A batch left
// open keeps the connection: then the pool's close ends the session.
func (e *pgEngine) unlock(db *ledgerDB, deadline time.Time) {
	// Only a lock this writer took and still holds: a writer that never
	// got it (a server that does not answer) closes at once.
	if !e.held.Swap(false) || e.turn == nil {
		return
	}
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	give, err := e.take(ctx)
	if err != nil {
		return
	}
	defer give()
	_, _ = db.DB.ExecContext(ctx, `SELECT pg_advisory_unlock($1, $2)`, pgLockClass, pgLockObj)
}

// close closes the pool, waiting for its connections until deadline
// (shared with unlock: Close's one bound).
func (e *pgEngine) close(deadline time.Time) error {
	done := make(chan struct{})
	go func() {
		e.pool.Close()
		close(done)
	}()
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-done:
		return nil
	case <-t.C:
		return fmt.Errorf("connections still in use after %v (a batch left open)", pgCloseWait)
	}
}

// RedactURL is u without its passwords, for logs and messages: the URL's
// user password and every parameter named like password (sslpassword
// too), also in a URL that does not parse (a typo must not print the
// password). Anything else, a SQLite
// path included, is returned as it is.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err == nil && p.Scheme != "" {
		changed := false
		if _, ok := p.User.Password(); ok {
			p.User, changed = url.UserPassword(p.User.Username(), redacted), true
		}
		if q, ok := redactQuery(p.RawQuery); ok {
			p.RawQuery, changed = q, true
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

// redactQuery hides the value of every parameter of a URL's query whose
// name says password (password, sslpassword: the client key's
// passphrase), in their order; ok is whether it hid any.
func redactQuery(raw string) (string, bool) {
	parts := strings.Split(raw, "&")
	ok := false
	for i, kv := range parts {
		k, _, _ := strings.Cut(kv, "=")
		name, err := url.QueryUnescape(k)
		if err != nil {
			name = k
		}
		if strings.Contains(strings.ToLower(name), "password") {
			parts[i], ok = k+"="+redacted, true
		}
	}
	return strings.Join(parts, "&"), ok
}

// redacted stands for a password in what the store prints.
const redacted = "xxxxx"

// redactPasswordParams hides the value of each password=value setting
// in s, a URL's query or a key=value connection string, the value bare
// or quoted; a name that ends in password (sslpassword) is one too.
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

// At is the Options of the ledger at loc: a PostgreSQL URL
// (postgres://…) or a SQLite file's path.
func At(loc string) Options {
	if IsPostgresURL(loc) {
		return Options{URL: loc}
	}
	return Options{Path: loc}
}

// IsPostgresURL reports whether u names a PostgreSQL database.
func IsPostgresURL(u string) bool {
	return strings.HasPrefix(u, "postgres://") || strings.HasPrefix(u, "postgresql://")
}

// holderName is how a writer names itself to PostgreSQL
// (application_name), so that a waiting one can say who holds the lock.
func holderName(now time.Time) string { return processStamp("gpuacct", now) }

func openPostgres(ctx context.Context, o Options) (*Ledger, error) {
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
	if !o.ReadOnly {
		// One connection, never replaced by the pool on its own: the
		// lock and the writes share its session.
		cfg.MaxConns, cfg.MinConns = 1, 1
		cfg.MaxConnLifetime, cfg.MaxConnLifetimeJitter, cfg.MaxConnIdleTime = pgForever, 0, pgForever
	}
	s := &Ledger{Path: name, Engine: EnginePostgres, now: o.Now}
	e := &pgEngine{now: o.Now}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("open store %q: %w", name, translate(err))
	}
	e.pool = pool
	s.pg = e
	s.db = &ledgerDB{DB: stdlib.OpenDBFromPool(pool), pg: &dialect.Postgres{}}
	s.db.SetMaxOpenConns(int(cfg.MaxConns))
	if !o.ReadOnly {
		e.turn = make(chan struct{}, 1)
		ses, err := waitLock(ctx, o, func() (pgSession, error) { return pgTakeLock(ctx, s.db.DB, o.BusyTimeout) })
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("open store %q: %w", name, err)
		}
		e.pid, e.started = ses.pid, ses.started
		e.held.Store(true)
	}
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
	if err := s.makeSamplePartitions(ctx, o.Now()); err != nil {
		s.Close()
		return nil, fmt.Errorf("open store %q: %w", name, err)
	}
	return s, nil
}

// pgGonePoll is how often a writer looks again at a lock whose holder's
// process is gone.
const pgGonePoll = 100 * time.Millisecond

// pgTakeLock takes the writer lock on db's connection (a writer's pool
// has one) and returns its backend's pid, or says who holds it
// (ErrLocked). A holder that is a gpuacct of this host whose process is
// gone (killed) is a session the server has not yet ended: it does when
// it notices the closed connection, a moment later, so that one is waited
// for, up to wait.
func pgTakeLock(ctx context.Context, db *sql.DB, wait time.Duration) (pgSession, error) {
	c, err := db.Conn(ctx)
	if err != nil {
		return pgSession{}, fmt.Errorf("writer lock: %w", translate(err))
	}
	defer c.Close()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for {
		var ok bool
		var ses pgSession
		// The session is read in the statement that takes the lock: it
		// is the one that holds it.
		if err := c.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1, $2), pg_backend_pid(), `+pgSessionStart, pgLockClass, pgLockObj).Scan(&ok, &ses.pid, &ses.started); err != nil {
			return pgSession{}, fmt.Errorf("writer lock: %w", translate(err))
		}
		if ok {
			return ses, nil
		}
		var app, backend string
		err = c.QueryRowContext(ctx, pgHolderSQL, pgLockClass, pgLockObj).Scan(&app, &backend)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return pgSession{}, fmt.Errorf("writer lock: %w", translate(err))
		}
		// No holder found: it let go, or its session is ending, between
		// the two statements; try again, as for a gone process.
		unknown := app == "" && backend == ""
		gone := holderGone(app)
		if gone || unknown {
			t := time.NewTimer(pgGonePoll)
			select {
			case <-t.C:
				continue
			case <-wctx.Done():
				t.Stop()
			}
		}
		holder := holderText(app, backend)
		if gone {
			holder += ", whose process is gone: the server frees its lock when it notices, try again shortly"
		}
		return pgSession{}, fmt.Errorf("%w (%s; advisory lock %d/%d): only one gpuacct ingest/serve may write the store", ErrLocked, holder, pgLockClass, pgLockObj)
	}
}

// pgHolderSQL names the session holding this database's writer lock:
// its application_name (holderName) and its backend and client address.
const pgHolderSQL = `SELECT coalesce(a.application_name, ''), 'backend ' || a.pid || coalesce(' from ' || host(a.client_addr), '')
 FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
 WHERE l.locktype = 'advisory' AND l.granted AND l.classid = $1 AND l.objid = $2 AND l.objsubid = 2
 AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database()) LIMIT 1`

// holderText is how messages name a lock holder found by pgHolderSQL.
func holderText(app, backend string) string {
	if app == "" && backend == "" {
		return "unknown process"
	}
	return strings.TrimSpace(app + " (" + backend + ")")
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
// its session is gone (the server restarted, the connection cut), when
// another writer may have taken over and this one must stop. While a
// batch has the writer's connection, it is what that batch's own check
// found (the batch cannot commit without the lock anyway).
func (s *Ledger) HoldsLock(ctx context.Context) bool {
	if s.pg == nil {
		return s.locked.Load()
	}
	if s.pg.turn == nil {
		return false
	}
	select {
	case s.pg.turn <- struct{}{}:
	default:
		return s.pg.held.Load()
	}
	defer func() { <-s.pg.turn }()
	if !s.pg.held.Load() {
		return false // lost or closed: a new session never has it back
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.pg.check(ctx, s.db) == nil
}

// pgReplicaLag is how far a standby's replay is behind: 0 once it has
// replayed all the WAL it received, else the age of the last transaction
// it replayed. Measured on the standby alone, so a reader needs no
// right on the primary (pg_stat_replication); the price is that a
// standby cut off from its primary may read 0 (the writer's
// gpuacct_ingest_last_success_timestamp_seconds tells that).
const pgReplicaLag = `SELECT pg_is_in_recovery(), CASE
 WHEN NOT pg_is_in_recovery() OR pg_last_wal_receive_lsn() = pg_last_wal_replay_lsn() THEN 0
 ELSE CAST(GREATEST(0, COALESCE(extract(epoch FROM clock_timestamp() - pg_last_xact_replay_timestamp()), 0)) AS DOUBLE PRECISION) END`

// ReplicaLag tells whether the ledger is a PostgreSQL standby (streaming
// replication, read-only) and, if so, how far its replay is behind the
// WAL it received. SQLite and a PostgreSQL primary are no standby.
func (s *Ledger) ReplicaLag(ctx context.Context) (lag time.Duration, standby bool, err error) {
	if s.pg == nil {
		return 0, false, nil
	}
	var secs float64
	if err := s.db.QueryRowContext(ctx, pgReplicaLag).Scan(&standby, &secs); err != nil {
		return 0, false, fmt.Errorf("replica lag: %w", translate(err))
	}
	return time.Duration(secs * float64(time.Second)), standby, nil
}
