// Package dialect turns the ledger's statements, written once in the SQL
// SQLite and PostgreSQL share (with SQLite's spellings where they
// differ), into PostgreSQL's. It speaks to no database: the store and its
// test helpers both use it.
package dialect

import (
	"strconv"
	"strings"
	"sync"
)

// Postgres turns one statement into PostgreSQL's, token by token (string literals, quoted names
// and comments are left alone):
//   - parameters: ? and ?N become $N, numbered as SQLite numbers them (a
//     bare ? is one past the highest number so far);
//   - user and end, reserved words in PostgreSQL, are quoted where they
//     name a column (an end that closes a CASE stays a keyword);
//   - instr → strpos, group_concat → string_agg, ifnull → coalesce, and
//     two-argument max/min → greatest/least, which mean the same only
//     when no argument is NULL (SQLite's are NULL then, PostgreSQL's skip
//     the NULL): a statement guards a nullable argument itself, with
//     coalesce or CASE;
//   - CAST(… AS INTEGER) → BIGINT and AS REAL → DOUBLE PRECISION, the
//     widths SQLite gives those names.
//
// Statements that need more than spelling (dates, the schema version)
// are chosen per engine where they are written.
//
// Postgres caches: the store's statements are a fixed set.
type Postgres struct {
	cache sync.Map // string → string
}

// SQL is q in PostgreSQL's spelling.
func (r *Postgres) SQL(q string) string {
	if v, ok := r.cache.Load(q); ok {
		return v.(string)
	}
	out := Rewrite(q)
	r.cache.Store(q, out)
	return out
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentPart(c byte) bool { return isIdentStart(c) || (c >= '0' && c <= '9') || c == '$' }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// Rewrite is Postgres.SQL without the cache.
func Rewrite(q string) string {
	w := rewriter{q: q}
	w.b.Grow(len(q) + 16)
	w.run()
	return w.b.String()
}

// rewriter walks one statement.
type rewriter struct {
	q        string
	b        strings.Builder
	maxParam int
	// exprEnd: the last token ends an expression (a name, a literal, a
	// parameter, a ')'), so an end that follows closes a CASE; after an
	// operator or a keyword, end is a column.
	exprEnd bool
	// prev and prev2 are the last two words, lower case.
	prev, prev2 string
	// table is the INSERT's table; upsert is true inside its ON CONFLICT
	// DO UPDATE, where PostgreSQL wants the row's columns qualified.
	table  string
	upsert bool
	// lhs: the next name is a SET target (after SET or a top-level ','),
	// which PostgreSQL wants bare.
	lhs   bool
	depth int
}

// next is the first byte from q[i] on that is not blank, or 0.
func (w *rewriter) next(i int) byte {
	for ; i < len(w.q); i++ {
		switch w.q[i] {
		case ' ', '\t', '\n', '\r':
			continue
		}
		return w.q[i]
	}
	return 0
}

func (w *rewriter) run() {
	q := w.q
	for i := 0; i < len(q); {
		c := q[i]
		j := i + 1
		switch {
		case c == '\'' || c == '"':
			j = skipQuoted(q, i)
			w.b.WriteString(q[i:j])
			w.exprEnd, w.lhs = true, false
		case c == '-' && j < len(q) && q[j] == '-':
			if k := strings.IndexByte(q[i:], '\n'); k >= 0 {
				j = i + k
			} else {
				j = len(q)
			}
			w.b.WriteString(q[i:j])
		case c == '/' && j < len(q) && q[j] == '*':
			if k := strings.Index(q[i+2:], "*/"); k >= 0 {
				j = i + 2 + k + 2
			} else {
				j = len(q)
			}
			w.b.WriteString(q[i:j])
		case c == '?':
			for j < len(q) && isDigit(q[j]) {
				j++
			}
			n := w.maxParam + 1
			if j > i+1 {
				n, _ = strconv.Atoi(q[i+1 : j])
			}
			w.maxParam = max(w.maxParam, n)
			w.b.WriteByte('$')
			w.b.WriteString(strconv.Itoa(n))
			w.exprEnd, w.lhs = true, false
		case isIdentStart(c):
			for j < len(q) && isIdentPart(q[j]) {
				j++
			}
			w.b.WriteString(w.ident(q[i:j], i, j))
		case isDigit(c):
			for j < len(q) && (isIdentPart(q[j]) || q[j] == '.') {
				j++
			}
			w.b.WriteString(q[i:j])
			w.exprEnd, w.lhs = true, false
		default:
			w.punct(c)
			w.b.WriteByte(c)
		}
		i = j
	}
}

func (w *rewriter) punct(c byte) {
	switch c {
	case ' ', '\t', '\n', '\r':
	case '(':
		w.depth++
		w.exprEnd, w.lhs = false, false
	case ')':
		w.depth--
		w.exprEnd, w.lhs = true, false
	case ',':
		w.exprEnd = false
		w.lhs = w.upsert && w.depth == 0
	case ';':
		w.upsert, w.table, w.exprEnd, w.lhs = false, "", false, false
	default:
		w.exprEnd, w.lhs = false, false
	}
}

// keywords are the words that never name a column here.
var keywords = map[string]bool{
	"select": true, "from": true, "where": true, "and": true, "or": true, "not": true, "is": true, "null": true,
	"in": true, "between": true, "like": true, "case": true, "when": true, "then": true, "else": true, "end": true,
	"as": true, "on": true, "conflict": true, "do": true, "update": true, "set": true, "nothing": true,
	"excluded": true, "distinct": true, "returning": true, "values": true, "insert": true, "into": true,
	"delete": true, "group": true, "order": true, "by": true, "limit": true, "offset": true, "join": true,
	"left": true, "inner": true, "using": true, "exists": true, "true": true, "false": true, "asc": true,
	"desc": true, "having": true, "union": true, "all": true, "cast": true, "with": true, "escape": true,
	"integer": true, "real": true, "text": true, "bigint": true, "collate": true, "filter": true, "over": true,
	"nulls": true, "first": true, "last": true,
}

// ident is the PostgreSQL spelling of the word q[i:j].
func (w *rewriter) ident(word string, i, j int) string {
	q := w.q
	lw := strings.ToLower(word)
	afterDot := i > 0 && q[i-1] == '.'
	nextc := w.next(j)
	lhs := w.lhs
	w.lhs = false
	out, isCol, ends := word, false, false
	switch lw {
	case "end":
		if w.exprEnd && !afterDot {
			ends = true // closes a CASE
			break
		}
		out, isCol = `"end"`, true
	case "user":
		out, isCol = `"user"`, true
	case "integer":
		if w.prev == "as" {
			out = "BIGINT"
		}
	case "real":
		if w.prev == "as" {
			out = "DOUBLE PRECISION"
		}
	case "first", "last":
		// columns of job_gpus, and words of NULLS FIRST/LAST
		isCol = w.prev != "nulls" && nextc != '('
	case "instr", "group_concat", "ifnull", "max", "min":
		if nextc != '(' {
			isCol = true
			break
		}
		open := j
		for q[open] != '(' {
			open++
		}
		switch {
		case lw == "instr":
			out = "strpos"
		case lw == "group_concat":
			out = "string_agg"
		case lw == "ifnull":
			out = "coalesce"
		case lw == "max" && topLevelArgs(q, open) >= 2:
			out = "greatest"
		case lw == "min" && topLevelArgs(q, open) >= 2:
			out = "least"
		}
	default:
		isCol = !keywords[lw] && nextc != '(' && nextc != '.'
	}
	switch {
	case w.prev == "into" && w.prev2 == "insert":
		w.table, isCol = out, false
	case lw == "set" && w.prev == "update" && w.prev2 == "do":
		w.upsert, w.lhs = true, true
	case lw == "returning":
		w.upsert = false
	}
	if w.upsert && isCol && !afterDot && !lhs && w.table != "" {
		out = w.table + "." + out
	}
	w.prev2, w.prev = w.prev, lw
	w.exprEnd = isCol || ends || lw == "null" || lw == "true" || lw == "false" || (afterDot && nextc != '(')
	return out
}

// skipQuoted returns the index after the quoted token starting at q[i]
// (a doubled quote inside is an escaped one).
func skipQuoted(q string, i int) int {
	quote := q[i]
	j := i + 1
	for j < len(q) {
		if q[j] == quote {
			if j+1 < len(q) && q[j+1] == quote {
				j += 2
				continue
			}
			return j + 1
		}
		j++
	}
	return len(q)
}

// topLevelArgs counts the arguments of the call whose '(' is at q[open].
func topLevelArgs(q string, open int) int {
	depth, args, empty := 0, 1, true
	for i := open; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\'' || c == '"':
			i = skipQuoted(q, i) - 1
			empty = false
		case c == '(':
			depth++
		case c == ')':
			depth--
			if depth == 0 {
				if empty {
					return 0
				}
				return args
			}
		case c == ',' && depth == 1:
			args++
		case c != ' ' && c != '\t' && c != '\n':
			empty = false
		}
	}
	return args
}
