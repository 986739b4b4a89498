package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// verifyPage is how many rows of each side a verification holds at once.
const verifyPage = 5000

// Verify compares src and dst table by table, holding src's writer lock
// (as Copy does; it refuses a source whose writer runs):
//   - the row counts and totals: the jobs', job hours' and rollups'
//     alloc_gpu_s, used_gpu_s, idle_gpu_s and energy_mj, and the samples'
//     count (sample_packs' n);
//   - the content: every row of every table, read from both sides in key
//     order a page at a time, each value in a canonical text (NULL apart
//     from the empty text, integers in decimal, reals in Go's shortest form that
//     reads back the same float64).
//
// It returns the tables with their row counts, or an error naming each
// table that differs: both figures, or the first key whose rows differ
// and how.
func Verify(ctx context.Context, src, dst *Ledger) ([]TableCopy, error) {
	lock, err := src.holdSource(ctx)
	if err != nil {
		return nil, fmt.Errorf("verify copy: %w", err)
	}
	defer lock.release()
	out, err := verify(ctx, src, dst)
	if err != nil {
		return out, err
	}
	if err := lock.held(ctx); err != nil {
		return out, fmt.Errorf("verify copy: %w", err)
	}
	return out, nil
}

// verify is Verify with src's lock already held.
func verify(ctx context.Context, src, dst *Ledger) ([]TableCopy, error) {
	var out []TableCopy
	var bad []string
	for _, t := range copyTables() {
		a, err := src.figures(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("verify %s: source %q: %w", t.name, src.Path, err)
		}
		b, err := dst.figures(ctx, t)
		if err != nil {
			return nil, fmt.Errorf("verify %s: destination %q: %w", t.name, dst.Path, err)
		}
		if a.rows != b.rows {
			bad = append(bad, fmt.Sprintf("%s has %d rows in the source, %d in the destination", t.name, a.rows, b.rows))
		}
		for i, c := range t.ints {
			if a.ints[i] != b.ints[i] {
				bad = append(bad, fmt.Sprintf("%s: sum(%s) is %d in the source, %d in the destination", t.name, c, a.ints[i], b.ints[i]))
			}
		}
		for i, c := range t.reals {
			if !closeEnough(a.reals[i], b.reals[i]) {
				bad = append(bad, fmt.Sprintf("%s: sum(%s) is %g in the source, %g in the destination", t.name, c, a.reals[i], b.reals[i]))
			}
		}
		diff, err := sameRows(ctx, src, dst, t)
		if err != nil {
			return nil, fmt.Errorf("verify %s: %w", t.name, err)
		}
		if diff != "" {
			bad = append(bad, diff)
		}
		out = append(out, TableCopy{Table: t.name, Rows: b.rows})
	}
	if len(bad) > 0 {
		return out, fmt.Errorf("verify copy of %q in %q: %s", src.Path, dst.Path, strings.Join(bad, "; "))
	}
	return out, nil
}

// closeEnough compares two sums of reals: the engines add in different
// orders, which moves the last bits and nothing more.
func closeEnough(a, b float64) bool {
	return math.Abs(a-b) <= 1e-9*math.Max(math.Abs(a), math.Abs(b))+1e-6
}

type tableFigures struct {
	rows  int64
	ints  []int64
	reals []float64
}

// figures is t's row count and totals in s, in one read.
func (s *Ledger) figures(ctx context.Context, t copyTable) (tableFigures, error) {
	f := tableFigures{ints: make([]int64, len(t.ints)), reals: make([]float64, len(t.reals))}
	sel := []string{`count(*)`}
	dest := []any{&f.rows}
	for i, c := range t.ints {
		sel = append(sel, `CAST(coalesce(sum(`+quoteIdent(c)+`), 0) AS INTEGER)`)
		dest = append(dest, &f.ints[i])
	}
	for i, c := range t.reals {
		sel = append(sel, `coalesce(sum(`+quoteIdent(c)+`), 0.0)`)
		dest = append(dest, &f.reals[i])
	}
	q := `SELECT ` + strings.Join(sel, ", ") + ` FROM ` + quoteIdent(t.name)
	if t.where != "" {
		q += ` WHERE ` + t.where
	}
	if err := s.db.QueryRowContext(ctx, q).Scan(dest...); err != nil {
		return f, translate(err)
	}
	return f, nil
}

// sameRows reads t from both sides in key order and returns "" when
// every row reads the same, else the first difference.
func sameRows(ctx context.Context, src, dst *Ledger, t copyTable) (string, error) {
	cols, keyAt, err := tableShape(ctx, src, dst, t)
	if mm, ok := errors.AsType[*columnMismatch](err); ok {
		return t.name + ": " + mm.Error(), nil
	}
	if err != nil {
		return "", err
	}
	// Each side is read by a goroutine of its own, a page ahead.
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()
	a := readRows(ctx, &wg, src, t, cols, keyAt)
	b := readRows(ctx, &wg, dst, t, cols, keyAt)
	ra, err := a.next(ctx)
	if err != nil {
		return "", err
	}
	rb, err := b.next(ctx)
	if err != nil {
		return "", err
	}
	for ra != nil || rb != nil {
		var c int
		switch {
		case ra == nil:
			c = 1
		case rb == nil:
			c = -1
		default:
			c = compareKeys(a.key(ra), b.key(rb))
		}
		// The first difference is the answer; the deferred cancel stops
		// both readers.
		switch {
		case c < 0:
			return fmt.Sprintf("%s: row %s is in the source only", t.name, keyText(t.key, a.key(ra))), nil
		case c > 0:
			return fmt.Sprintf("%s: row %s is in the destination only", t.name, keyText(t.key, b.key(rb))), nil
		case !bytes.Equal(a.cur, b.cur):
			return rowDiff(t, cols, ra, rb), nil
		}
		if c <= 0 {
			if ra, err = a.next(ctx); err != nil {
				return "", err
			}
		}
		if c >= 0 {
			if rb, err = b.next(ctx); err != nil {
				return "", err
			}
		}
	}
	return "", nil
}

// rowStream reads a table of one side in key order, a page at a time,
// and keeps the canonical text of the row it last handed out.
type rowStream struct {
	path  string
	keyAt []int
	pages <-chan streamPage
	page  [][]any
	i     int
	// cur is the canonical text of the row last handed out.
	cur []byte
}

type streamPage struct {
	rows [][]any
	err  error
}

// readRows starts reading t of s in key order, one page ahead of next:
// at most three pages a side are held.
func readRows(ctx context.Context, wg *sync.WaitGroup, s *Ledger, t copyTable, cols []string, keyAt []int) *rowStream {
	ch := make(chan streamPage, 1)
	r := &rowStream{path: s.Path, keyAt: keyAt, pages: ch}
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ch)
		var last []any
		for {
			rows, err := s.page(ctx, t, cols, last, verifyPage)
			select {
			case ch <- streamPage{rows: rows, err: err}:
			case <-ctx.Done():
				return
			}
			if err != nil || len(rows) < verifyPage {
				return
			}
			last = r.key(rows[len(rows)-1])
		}
	}()
	return r
}

// next is the next row, nil after the last.
func (r *rowStream) next(ctx context.Context) ([]any, error) {
	if r.i == len(r.page) {
		var p streamPage
		ok := false
		select {
		case p, ok = <-r.pages:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if !ok {
			return nil, nil
		}
		if p.err != nil {
			return nil, fmt.Errorf("read %q: %w", r.path, p.err)
		}
		r.page, r.i = p.rows, 0
		if len(p.rows) == 0 {
			return nil, nil
		}
	}
	row := r.page[r.i]
	r.i++
	var err error
	if r.cur, err = appendRow(r.cur[:0], row); err != nil {
		return nil, fmt.Errorf("read %q: %w", r.path, err)
	}
	return row, nil
}

func (r *rowStream) key(row []any) []any { return keyOf(row, r.keyAt) }

// appendRow appends the canonical text of row: each value tagged by its
// kind, so that NULL, the empty text and 0 differ, and a string's length before it,
// so that no two rows read the same.
func appendRow(b []byte, row []any) ([]byte, error) {
	for _, v := range row {
		var err error
		if b, err = appendValue(b, v); err != nil {
			return b, err
		}
	}
	return append(b, '\n'), nil
}

// maxExact is the largest integer every float64 below it holds exactly.
const maxExact = 1 << 53

func appendValue(b []byte, v any) ([]byte, error) {
	switch x := v.(type) {
	case nil:
		return append(b, 'N'), nil
	case string:
		b = append(b, 'S')
		b = strconv.AppendInt(b, int64(len(x)), 10)
		return append(append(b, ':'), x...), nil
	case []byte:
		b = append(b, 'B')
		b = strconv.AppendInt(b, int64(len(x)), 10)
		return append(append(b, ':'), x...), nil
	case bool:
		if x {
			return append(b, "I1;"...), nil
		}
		return append(b, "I0;"...), nil
	case int64:
		return append(strconv.AppendInt(append(b, 'I'), x, 10), ';'), nil
	case int32:
		return appendValue(b, int64(x))
	case int:
		return appendValue(b, int64(x))
	case float64:
		// A whole real is its integer: an engine may hand back a REAL
		// column's 5.0 as 5, and -0 as 0.
		if x == math.Trunc(x) && math.Abs(x) < maxExact {
			return appendValue(b, int64(x))
		}
		return append(strconv.AppendFloat(append(b, 'F'), x, 'g', -1, 64), ';'), nil
	case float32:
		return appendValue(b, float64(x))
	case time.Time:
		return append(x.UTC().AppendFormat(append(b, 'T'), time.RFC3339Nano), ';'), nil
	}
	return b, fmt.Errorf("value %v of type %T has no canonical text", v, v)
}

// compareKeys orders two keys as ORDER BY does on both engines: numbers
// by value, text byte by byte (SQLite's BINARY, PostgreSQL's "C").
func compareKeys(a, b []any) int {
	for i := range a {
		if c := compareValue(a[i], b[i]); c != 0 {
			return c
		}
	}
	return 0
}

func compareValue(a, b any) int {
	ra, rb := rank(a), rank(b)
	if ra != rb {
		return ra - rb
	}
	switch x := a.(type) {
	case string:
		return strings.Compare(x, b.(string))
	case nil:
		return 0
	}
	fa, ia := number(a)
	fb, ib := number(b)
	if ia != nil && ib != nil {
		return cmpInt(*ia, *ib)
	}
	switch {
	case fa < fb:
		return -1
	case fa > fb:
		return 1
	}
	return 0
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// rank orders kinds as SQLite does: NULL, numbers, text.
func rank(v any) int {
	switch v.(type) {
	case nil:
		return 0
	case string:
		return 2
	}
	return 1
}

// number is a numeric value as a float, and as an integer when it is one.
func number(v any) (float64, *int64) {
	var i int64
	switch x := v.(type) {
	case int64:
		i = x
	case int32:
		i = int64(x)
	case int:
		i = int64(x)
	case bool:
		if x {
			i = 1
		}
	case float64:
		return x, nil
	default:
		return 0, nil
	}
	return float64(i), &i
}

// keyText is a key for messages: id=7, or job=7, node_id=2.
func keyText(names []string, vals []any) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + showValue(vals[i])
	}
	return strings.Join(parts, ", ")
}

// rowDiff says how two rows of the same key differ: each differing
// column with its value on both sides.
func rowDiff(t copyTable, cols []string, a, b []any) string {
	var sa, sb []string
	var ea, eb []byte
	for i, c := range cols {
		ea, _ = appendValue(ea[:0], a[i])
		eb, _ = appendValue(eb[:0], b[i])
		if !bytes.Equal(ea, eb) {
			sa = append(sa, c+"="+showValue(a[i]))
			sb = append(sb, c+"="+showValue(b[i]))
		}
	}
	key := make([]any, len(t.key))
	for i, k := range t.key {
		key[i] = a[slices.Index(cols, k)]
	}
	return fmt.Sprintf("%s: row %s differs: %s in the source, %s in the destination", t.name, keyText(t.key, key), strings.Join(sa, " "), strings.Join(sb, " "))
}

// showValue is a value for messages, long text cut short.
func showValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "NULL"
	case string:
		if utf8.RuneCountInString(x) > 40 {
			x = string([]rune(x)[:40]) + "…"
		}
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}
