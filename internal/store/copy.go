package store

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// DefaultCopyBatch is how many rows Copy moves in one transaction unless
// told otherwise; MaxCopyBatch bounds what it may be told (one batch is
// held in memory).
const (
	DefaultCopyBatch = 10000
	MaxCopyBatch     = 1000000
)

// The destination's meta keys that record a copy in progress: the source
// it copies, and per table how far it got. They are the copy's own and
// are neither copied nor compared.
const (
	copyKeyPrefix = "migrate."
	copySourceKey = copyKeyPrefix + "source"
	copyTableKey  = copyKeyPrefix + "table."
)

// CopyOptions say how Copy works.
type CopyOptions struct {
	// Batch is the rows per transaction; 0 means DefaultCopyBatch.
	Batch int
	// Progress, when set, is told after each committed batch, and once
	// for a table an earlier run finished. A caller may cancel Copy's
	// context from it (the tests interrupt a copy so).
	Progress func(CopyProgress)
}

// CopyProgress is how far the copy of one table is.
type CopyProgress struct {
	Table string
	// Rows is how many rows of the table the destination holds so far.
	Rows int64
	// Done: the table is copied.
	Done bool
}

// TableCopy is one table of a copy.
type TableCopy struct {
	Table string
	// Copied is how many rows this run copied (less than Rows when it
	// resumed an interrupted copy).
	Copied int64
	// Rows is the table's row count, equal on both sides.
	Rows int64
}

// CopyResult is what Copy did; every table in it was verified.
type CopyResult struct {
	// Resumed: an earlier, interrupted run had begun the copy.
	Resumed bool
	Tables  []TableCopy
}

// copyTable is one table of the ledger as Copy moves it.
type copyTable struct {
	name string
	// key is the primary key: the order of the copy and its resume point.
	key []string
	// id: the key is an identity column whose PostgreSQL sequence must
	// follow the copied ids.
	id bool
	// ints and reals are the columns whose totals must agree.
	ints, reals []string
	// where leaves rows out of the copy and its counts.
	where string
	// blob is the column that holds bytes, not text (sample_packs' data).
	blob string
}

// copyTables is every table of the ledger, in an order that satisfies the
// foreign keys. A table added by a migration must be added here
// (TestCopyKnowsEveryTable); Copy refuses a ledger holding one it does
// not know rather than leave it behind.
func copyTables() []copyTable {
	money := func(t copyTable) copyTable {
		t.ints = []string{"alloc_gpu_s", "energy_mj"}
		t.reals = []string{"used_gpu_s", "idle_gpu_s", "billing"}
		return t
	}
	dims := []string{"cluster", "user", "account", "partition"}
	return []copyTable{
		{name: "nodes", key: []string{"id"}, id: true},
		{name: "gpus", key: []string{"id"}, id: true},
		money(copyTable{name: "jobs", key: []string{"id"}, id: true}),
		{name: "job_nodes", key: []string{"job", "node_id"}},
		{name: "job_gpus", key: []string{"job", "gpu_id"}},
		{name: "sample_packs", key: []string{"gpu_id", "t0_ms"}, ints: []string{"n"}, blob: "data"},
		money(copyTable{name: "job_hours", key: []string{"job", "node_id", "hour"}}),
		money(copyTable{name: "rollup_hourly", key: append(append([]string{"hour"}, dims...), "node_id", "model", "ignored")}),
		money(copyTable{name: "rollup_hourly_sum", key: append(append([]string{"hour"}, dims...), "model", "ignored")}),
		money(copyTable{name: "rollup_daily", key: append(append([]string{"day"}, dims...), "model", "ignored")}),
		money(copyTable{name: "rollup_monthly", key: append(append([]string{"month"}, dims...), "model", "ignored")}),
		money(copyTable{name: "rollup_node_hour", key: []string{"hour", "cluster", "partition", "node_id", "model", "ignored"}}),
		money(copyTable{name: "rollup_node_day", key: []string{"day", "cluster", "partition", "node_id", "model", "ignored"}}),
		money(copyTable{name: "rollup_node_month", key: []string{"month", "cluster", "partition", "node_id", "model", "ignored"}}),
		money(copyTable{name: "rollup_model_hour", key: []string{"hour", "cluster", "partition", "model", "ignored"}}),
		money(copyTable{name: "rollup_zone_day", key: append(append([]string{"start"}, dims...), "model", "ignored")}),
		money(copyTable{name: "rollup_zone_week", key: append(append([]string{"start"}, dims...), "model", "ignored")}),
		{name: "ingested_files", key: []string{"node", "name"}},
		{name: "passes", key: []string{"id"}, id: true},
		{name: "meta", key: []string{"key"}, where: `"key" NOT LIKE '` + copyKeyPrefix + `%'`},
		{name: "applied_keys", key: []string{"key_hi", "key_lo"}, blob: "content"},
		{name: "notes", key: []string{"id"}, id: true},
		{name: "slurm_accounts", key: []string{"cluster", "account"}},
		{name: "slurm_events", key: []string{"cluster", "node", "start"}},
		{name: "slurm_reservations", key: []string{"cluster", "id", "start"}},
		{name: "gpu_events", key: []string{"gpu_id", "t_ns", "kind", "code", "reason"}, ints: []string{"suppressed"}},
		{name: "job_gpu_metrics", key: []string{"job", "gpu_id", "name"}, reals: []string{"seconds", "value_s"}},
		{name: "series_buckets", key: []string{"gpu_id", "job", "restart", "bucket_ms"}, ints: []string{"n", "window_ms", "energy_mj"}, reals: []string{"util_share_w_ms"}},
		{name: "series_packs", key: []string{"gpu_id", "t0_ms"}, blob: "data"},
		{name: "notify_messages", key: []string{"id"}, id: true},
		{name: "notify_optout", key: []string{"user", "rule"}},
		{name: "billing_weights", key: []string{"cluster", "partition", "source", "since"}},
		{name: "job_resources", key: []string{"job"}, ints: []string{"total_cpu_ms", "max_rss"}},
	}
}

// copyMark is a table's progress, kept in the destination's meta in the
// transaction of each batch.
type copyMark struct {
	Rows int64 `json:"rows"`
	Last []any `json:"last,omitempty"`
	Done bool  `json:"done,omitempty"`
}

// Copy copies the ledger src (opened ReadOnly) into dst (opened as the
// writer), table by table in key order, o.Batch rows a transaction. Each
// transaction also records how far it got, so a copy killed at any point
// resumes after its last committed batch when run again. dst must be
// empty or a partial copy of src, at the same schema version. Then both
// are compared (Verify). src's writer lock is held throughout, so that no
// gpuacct serve or ingest changes rows already copied; Copy refuses a
// source whose writer runs.
func Copy(ctx context.Context, src, dst *Ledger, o CopyOptions) (CopyResult, error) {
	var res CopyResult
	if o.Batch == 0 {
		o.Batch = DefaultCopyBatch
	}
	if o.Batch < 1 || o.Batch > MaxCopyBatch {
		return res, fmt.Errorf("copy ledger: batch of %d rows: want 1 to %d", o.Batch, MaxCopyBatch)
	}
	if src.Engine == dst.Engine && src.Path == dst.Path {
		return res, fmt.Errorf("copy ledger %q: source and destination are the same ledger", src.Path)
	}
	lock, err := src.holdSource(ctx)
	if err != nil {
		return res, fmt.Errorf("copy ledger: %w", err)
	}
	defer lock.release()
	if err := sameSchema(ctx, src, dst); err != nil {
		return res, err
	}
	marks, resumed, err := dst.claimCopy(ctx, src)
	if err != nil {
		return res, err
	}
	res.Resumed = resumed
	for _, t := range copyTables() {
		n, err := copyOne(ctx, src, dst, t, marks[t.name], o)
		if err != nil {
			return res, err
		}
		res.Tables = append(res.Tables, TableCopy{Table: t.name, Copied: n})
	}
	counts, err := verify(ctx, src, dst)
	if err != nil {
		return res, err
	}
	if err := lock.held(ctx); err != nil {
		return res, fmt.Errorf("copy ledger: %w", err)
	}
	for i := range res.Tables {
		res.Tables[i].Rows = counts[i].Rows
	}
	return res, nil
}

// sameSchema refuses two ledgers at different schema versions, or one
// holding a table Copy does not know or lacking one it does.
func sameSchema(ctx context.Context, src, dst *Ledger) error {
	sv, err := src.Version(ctx)
	if err != nil {
		return fmt.Errorf("copy ledger: source %q: %w", src.Path, err)
	}
	dv, err := dst.Version(ctx)
	if err != nil {
		return fmt.Errorf("copy ledger: destination %q: %w", dst.Path, err)
	}
	if sv != dv {
		return fmt.Errorf("copy ledger: source %q is at schema %d, destination %q at %d: open the older one once with this gpuacct's writer (gpuacct ingest) so that both are at schema %d", src.Path, sv, dst.Path, dv, max(sv, dv))
	}
	for _, s := range []*Ledger{src, dst} {
		if err := s.knownTables(ctx); err != nil {
			return fmt.Errorf("copy ledger: %w", err)
		}
	}
	return nil
}

// knownTables checks that s holds exactly the tables of copyTables.
func (s *Ledger) knownTables(ctx context.Context) error {
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY name LIMIT 1000`
	if s.pg != nil {
		// Month partitions of samples are samples; gpusuite_schema is the
		// version, which Open writes on each side.
		q = `SELECT c.relname::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p') AND NOT c.relispartition AND c.relname <> 'gpusuite_schema'
 ORDER BY 1 LIMIT 1000`
	}
	have, err := s.texts(ctx, q)
	if err != nil {
		return fmt.Errorf("list the tables of %q: %w", s.Path, err)
	}
	want := map[string]bool{}
	for _, t := range copyTables() {
		want[t.name] = true
	}
	for _, name := range have {
		if !want[name] {
			return fmt.Errorf("%q holds table %q, which this gpuacct cannot copy (made by a newer gpuacct?)", s.Path, name)
		}
		delete(want, name)
	}
	for _, t := range copyTables() {
		if want[t.name] {
			return fmt.Errorf("%q has no table %q: not a gpusuite ledger at its schema: %w", s.Path, t.name, ErrNotLedger)
		}
	}
	return nil
}

// claimCopy reads dst's copy marks when it is a partial copy of src, or
// marks an empty dst as src's copy; any other ledger is refused.
func (s *Ledger) claimCopy(ctx context.Context, src *Ledger) (map[string]copyMark, bool, error) {
	rows, err := translateRows(s.db.QueryContext(ctx, `SELECT key, value FROM meta WHERE key LIKE ? ORDER BY key LIMIT 1000`, copyKeyPrefix+"%"))
	kv := map[string]string{}
	err = eachRow(rows, err, func(r batchRows) error {
		var k, v string
		if err := r.Scan(&k, &v); err != nil {
			return err
		}
		kv[k] = v
		return nil
	})
	if err != nil {
		return nil, false, fmt.Errorf("copy ledger: read the copy marks of %q: %w", s.Path, err)
	}
	source, ok := kv[copySourceKey]
	if ok && source != src.Path {
		return nil, false, fmt.Errorf("copy ledger: destination %q holds a copy of %q, not of %q: migrate into an empty database or file", s.Path, source, src.Path)
	}
	if !ok {
		if t, err := s.firstFilled(ctx); err != nil {
			return nil, false, fmt.Errorf("copy ledger: %w", err)
		} else if t != "" {
			return nil, false, fmt.Errorf("copy ledger: destination %q already holds a ledger (table %s has rows) that is not a copy of %q: migrate into an empty database or file", s.Path, t, src.Path)
		}
		if err := s.writeTx(ctx, func(_ *sql.Conn, tx *ledgerTx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES (?, ?)`, copySourceKey, src.Path)
			return translate(err)
		}); err != nil {
			return nil, false, fmt.Errorf("copy ledger: mark %q as the copy of %q: %w", s.Path, src.Path, err)
		}
		return map[string]copyMark{}, false, nil
	}
	marks := map[string]copyMark{}
	for k, v := range kv {
		name, ok := strings.CutPrefix(k, copyTableKey)
		if !ok {
			continue
		}
		m, err := decodeMark(v)
		if err != nil {
			return nil, false, fmt.Errorf("copy ledger: %q: mark %s %q: %w", s.Path, k, v, err)
		}
		marks[name] = m
	}
	return marks, true, nil
}

func decodeMark(v string) (copyMark, error) {
	var m copyMark
	d := json.NewDecoder(strings.NewReader(v))
	d.UseNumber()
	if err := d.Decode(&m); err != nil {
		return m, err
	}
	// A key's numbers are integers; JSON would make them float64.
	for i, x := range m.Last {
		if n, ok := x.(json.Number); ok {
			v, err := n.Int64()
			if err != nil {
				return m, fmt.Errorf("key value %s: %w", n, err)
			}
			m.Last[i] = v
		}
	}
	return m, nil
}

// firstFilled is the first table of s holding a row ("" for none).
func (s *Ledger) firstFilled(ctx context.Context) (string, error) {
	for _, t := range copyTables() {
		q := `SELECT 1 FROM ` + quoteIdent(t.name)
		if t.where != "" {
			q += ` WHERE ` + t.where
		}
		var one int
		err := s.db.QueryRowContext(ctx, q+` LIMIT 1`).Scan(&one)
		if errors.Is(err, sql.ErrNoRows) {
			continue
		}
		if err != nil {
			return "", fmt.Errorf("read table %s of %q: %w", t.name, s.Path, translate(err))
		}
		return t.name, nil
	}
	return "", nil
}

func quoteIdent(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }

func quoteIdents(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = quoteIdent(n)
	}
	return strings.Join(q, ", ")
}

// columns lists t's columns in s.
func (s *Ledger) columns(ctx context.Context, t string) ([]string, error) {
	q := `SELECT name FROM pragma_table_info(?) ORDER BY cid LIMIT 1000`
	if s.pg != nil {
		q = `SELECT column_name::text FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position LIMIT 1000`
	}
	cols, err := s.texts(ctx, q, t)
	if err != nil {
		return nil, fmt.Errorf("columns of %s in %q: %w", t, s.Path, err)
	}
	return cols, nil
}

// copyOne copies what is left of table t and returns how many rows it
// copied.
func copyOne(ctx context.Context, src, dst *Ledger, t copyTable, m copyMark, o CopyOptions) (int64, error) {
	if m.Done {
		if o.Progress != nil {
			o.Progress(CopyProgress{Table: t.name, Rows: m.Rows, Done: true})
		}
		return 0, nil
	}
	cols, keyAt, err := tableShape(ctx, src, dst, t)
	if err != nil {
		return 0, fmt.Errorf("copy %s: %w", t.name, err)
	}
	// The sample partitions made so far, kept for the whole table: pages
	// in (gpu_id, t_ms) order mostly span the months the page before did.
	// The copy holds dst's writer turn, and nothing drops partitions.
	parts := map[int64]bool{}
	var copied int64
	for {
		page, err := src.page(ctx, t, cols, m.Last, o.Batch)
		if err != nil {
			return copied, fmt.Errorf("copy %s: read %q: %w", t.name, src.Path, err)
		}
		if len(page) > 0 {
			m.Last = keyOf(page[len(page)-1], keyAt)
		}
		m.Rows += int64(len(page))
		m.Done = len(page) < o.Batch
		if err := dst.putPage(ctx, t, cols, page, m, parts); err != nil {
			return copied, fmt.Errorf("copy %s into %q after %d rows: %w", t.name, dst.Path, m.Rows-int64(len(page)), err)
		}
		copied += int64(len(page))
		if o.Progress != nil {
			o.Progress(CopyProgress{Table: t.name, Rows: m.Rows, Done: m.Done})
		}
		if m.Done {
			return copied, nil
		}
	}
}

// columnMismatch: the two sides of a copy have not the same columns.
type columnMismatch struct{ src, dst []string }

func (e *columnMismatch) Error() string {
	return fmt.Sprintf("the source's columns (%s) are not the destination's (%s)", strings.Join(e.src, ", "), strings.Join(e.dst, ", "))
}

// tableShape is t's columns as src has them and where its key columns
// are among them; the columns must be dst's too, in any order (else a
// *columnMismatch).
func tableShape(ctx context.Context, src, dst *Ledger, t copyTable) (cols []string, keyAt []int, err error) {
	cols, err = src.columns(ctx, t.name)
	if err != nil {
		return nil, nil, err
	}
	dcols, err := dst.columns(ctx, t.name)
	if err != nil {
		return nil, nil, err
	}
	if !slices.Equal(slices.Sorted(slices.Values(cols)), slices.Sorted(slices.Values(dcols))) {
		return nil, nil, &columnMismatch{src: cols, dst: dcols}
	}
	keyAt = make([]int, len(t.key))
	for i, k := range t.key {
		if keyAt[i] = slices.Index(cols, k); keyAt[i] < 0 {
			return nil, nil, fmt.Errorf("no key column %s in %q", k, src.Path)
		}
	}
	return cols, keyAt, nil
}

// page reads up to n rows of t after the key last (from the start when
// nil), in key order: one bounded read, never the whole table.
func (s *Ledger) page(ctx context.Context, t copyTable, cols []string, last []any, n int) ([][]any, error) {
	q := `SELECT ` + quoteIdents(cols) + ` FROM ` + quoteIdent(t.name)
	var conds []string
	var args []any
	if last != nil {
		marks := strings.TrimSuffix(strings.Repeat("?, ", len(last)), ", ")
		conds = append(conds, `(`+quoteIdents(t.key)+`) > (`+marks+`)`)
		args = append(args, last...)
	}
	if t.where != "" {
		conds = append(conds, t.where)
	}
	if len(conds) > 0 {
		q += ` WHERE ` + strings.Join(conds, " AND ")
	}
	q += ` ORDER BY ` + quoteIdents(t.key) + ` LIMIT ?`
	args = append(args, n)
	rows, err := translateRows(s.db.QueryContext(ctx, q, args...))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, translate(err)
		}
		// Text may come as bytes; only the blob column holds bytes.
		for i, v := range vals {
			if b, ok := v.([]byte); ok && cols[i] != t.blob {
				vals[i] = string(b)
			}
		}
		out = append(out, vals)
	}
	return out, translate(rows.Err())
}

// copyParams bounds the parameters of one INSERT (SQLite allows 32 766).
const copyParams = 30000

// putPage writes one page of t and its mark m in one transaction; on
// PostgreSQL a finished table's identity sequence moves past its ids.
// parts holds the months whose sample partitions are made already.
func (s *Ledger) putPage(ctx context.Context, t copyTable, cols []string, page [][]any, m copyMark, parts map[int64]bool) error {
	return s.writeTx(ctx, func(conn *sql.Conn, tx *ledgerTx) error {
		if t.name == "sample_packs" && s.pg != nil {
			if err := samplePartitions(ctx, conn, page, slices.Index(cols, "t0_ms"), parts); err != nil {
				return err
			}
		}
		if s.pg != nil {
			if err := copyIn(ctx, conn, t.name, cols, page); err != nil {
				return err
			}
		} else if err := insertPage(ctx, tx, t.name, cols, page); err != nil {
			return err
		}
		if m.Done && t.id && s.pg != nil {
			// Copied ids bypass the identity; the next row the writer adds
			// must not collide with them.
			q := `SELECT setval(pg_get_serial_sequence('` + t.name + `', 'id'), coalesce(max(id), 0) + 1, false) FROM ` + quoteIdent(t.name)
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("move the id sequence past the copied ids: %w", translate(err))
			}
		}
		v, err := json.Marshal(m)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO meta(key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value`,
			copyTableKey+t.name, string(v)); err != nil {
			return fmt.Errorf("record progress: %w", translate(err))
		}
		return nil
	})
}

// insertPage adds page's rows to table name by multi-row INSERTs.
func insertPage(ctx context.Context, tx *ledgerTx, name string, cols []string, page [][]any) error {
	per := max(1, copyParams/len(cols))
	head := `INSERT INTO ` + quoteIdent(name) + `(` + quoteIdents(cols) + `) VALUES `
	one := `(` + strings.TrimSuffix(strings.Repeat("?, ", len(cols)), ", ") + `)`
	for from := 0; from < len(page); from += per {
		chunk := page[from:min(from+per, len(page))]
		args := make([]any, 0, len(chunk)*len(cols))
		for _, r := range chunk {
			args = append(args, r...)
		}
		q := head + strings.TrimSuffix(strings.Repeat(one+", ", len(chunk)), ", ")
		if _, err := tx.ExecContext(ctx, q, args...); err != nil {
			return translate(err)
		}
	}
	return nil
}

// copyIn adds page's rows to table name on PostgreSQL by COPY, in the
// transaction on conn: several times faster than INSERTs, and a
// partitioned table routes each row to its partition.
func copyIn(ctx context.Context, conn *sql.Conn, name string, cols []string, page [][]any) error {
	if len(page) == 0 {
		return nil
	}
	return withPgx(conn, func(c *pgx.Conn) error {
		if _, err := c.CopyFrom(ctx, pgx.Identifier{name}, cols, pgx.CopyFromRows(page)); err != nil {
			return translate(err)
		}
		return nil
	})
}

// samplePartitions makes the month partitions of samples that page's
// rows (t_ms at column at) go into, as the writer makes them
// (write_samples_pg.go), in the transaction on conn, and adds their months to
// parts; a month in parts already is skipped.
func samplePartitions(ctx context.Context, conn *sql.Conn, page [][]any, at int, parts map[int64]bool) error {
	if at < 0 {
		return errors.New("sample_packs: no t0_ms column")
	}
	si := sampleInserter{parts: parts}
	return withPgx(conn, func(c *pgx.Conn) error {
		for _, r := range page {
			tms, ok := r[at].(int64)
			if !ok {
				return fmt.Errorf("sample_packs: t0_ms %v (%T) is not an integer", r[at], r[at])
			}
			if err := si.ensurePartition(ctx, c, nil, tms); err != nil {
				return err
			}
		}
		return nil
	})
}

// sourceLock is the writer lock of a copy's or a verification's source,
// held so that no gpuacct serve or ingest writes it meanwhile: a writer
// that starts waits (serve) or refuses (ingest), naming gpuacct migrate.
type sourceLock struct {
	file *os.File  // SQLite: the flock on the lock file
	conn *pgx.Conn // PostgreSQL: the session holding the advisory lock
}

// holdSource takes s's writer lock, unless s is the writer and holds it
// already. A lock held by another process is refused at once, in one
// line that says what to do.
func (s *Ledger) holdSource(ctx context.Context) (*sourceLock, error) {
	if s.HoldsLock(ctx) {
		return &sourceLock{}, nil
	}
	migrate := processStamp("gpuacct migrate", s.now())
	if s.pg == nil {
		return holdSQLite(s.Path, migrate)
	}
	cc := s.pg.pool.Config().ConnConfig
	cc.RuntimeParams["application_name"] = migrate
	c, err := pgx.ConnectConfig(ctx, cc)
	if err != nil {
		return nil, fmt.Errorf("take the writer lock of the source %q: %w", s.Path, translate(err))
	}
	var ok bool
	if err := c.QueryRow(ctx, `SELECT pg_try_advisory_lock($1, $2)`, pgLockClass, pgLockObj).Scan(&ok); err != nil {
		_ = c.Close(ctx)
		return nil, fmt.Errorf("take the writer lock of the source %q: %w", s.Path, translate(err))
	}
	if ok {
		return &sourceLock{conn: c}, nil
	}
	var app, backend string
	_ = c.QueryRow(ctx, pgHolderSQL, pgLockClass, pgLockObj).Scan(&app, &backend)
	_ = c.Close(ctx)
	return nil, sourceBusy(s.Path, holderText(app, backend), fmt.Sprintf("advisory lock %d/%d", pgLockClass, pgLockObj))
}

// holdSQLite takes the flock of the SQLite ledger at path, naming
// gpuacct migrate in the lock file where it can be written.
func holdSQLite(path, migrate string) (*sourceLock, error) {
	lp := LockPath(path)
	f, holder, err := flockWriter(lp, migrate, true)
	if err != nil {
		return nil, fmt.Errorf("take the writer lock %q of the source: %w", lp, err)
	}
	if f == nil {
		return nil, sourceBusy(path, holder, "lock "+lp)
	}
	return &sourceLock{file: f}, nil
}

// sourceBusy is the refusal of a source whose writer runs.
func sourceBusy(name, holder, lock string) error {
	return fmt.Errorf("source %q is being written (%s; %s): stop gpuacct serve/ingest on the source first: %w", name, holder, lock, ErrLocked)
}

// held reports an error when the lock was lost on the way (the server
// ended its session): another writer may have changed the source.
func (l *sourceLock) held(ctx context.Context) error {
	if l.conn == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := l.conn.Ping(ctx); err != nil {
		return fmt.Errorf("the source's writer lock was lost during the copy (%v): a writer may have changed it; run again", translate(err))
	}
	return nil
}

// release frees the lock.
func (l *sourceLock) release() {
	if l.file != nil {
		_ = l.file.Truncate(0)
		l.file.Close() // closing drops the flock
		l.file = nil
	}
	if l.conn != nil {
		ctx, cancel := context.WithTimeout(context.Background(), pgCloseWait)
		_, _ = l.conn.Exec(ctx, `SELECT pg_advisory_unlock($1, $2)`, pgLockClass, pgLockObj)
		_ = l.conn.Close(ctx)
		cancel()
		l.conn = nil
	}
}
