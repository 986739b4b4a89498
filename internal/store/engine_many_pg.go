package store

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// heldRows are the rows of one statement that wait (hold).
type heldRows struct {
	table, q string
	key      int
	rows     [][]any
}

// maxHeldKey bounds heldRows.key.
const maxHeldKey = 4

func (p *pipeline) hold(table, q string, key int, row []any) error {
	if p.err != nil {
		return p.err
	}
	if key > maxHeldKey {
		return fmt.Errorf("%s: a key of %d values, more than %d", firstLine(q), key, maxHeldKey)
	}
	for _, h := range p.held {
		if h.q == q {
			h.rows = append(h.rows, row)
			return nil
		}
	}
	p.held = append(p.held, &heldRows{table: table, q: q, key: key, rows: [][]any{row}})
	return nil
}

// distinct are h's rows, each key's last, in order: a statement over
// arrays changes a row once, where one upsert after the other leaves the
// last.
func (h *heldRows) distinct() [][]any {
	if h.key == 0 {
		return h.rows
	}
	keyOf := func(r []any) (k [maxHeldKey]any) {
		copy(k[:], r[:h.key])
		return k
	}
	last := make(map[[maxHeldKey]any]int, len(h.rows))
	for i, r := range h.rows {
		last[keyOf(r)] = i
	}
	if len(last) == len(h.rows) {
		return h.rows
	}
	kept := h.rows[:0]
	for i, r := range h.rows {
		if last[keyOf(r)] == i {
			kept = append(kept, r)
		}
	}
	return kept
}

// maxManyRows bounds the rows of one statement over arrays (a few tens of
// bytes a value).
const maxManyRows = 8192

// addMany sends q, a one-row write, for each of rows as statements over
// arrays (manyForm), maxManyRows rows each.
func (p *pipeline) addMany(ctx context.Context, q string, rows [][]any) error {
	return p.write(ctx, q, func(c *pgx.Conn) error {
		sd, err := p.describe(ctx, c, q)
		if err != nil {
			return err
		}
		for _, r := range rows {
			if len(r) != len(sd.ParamOIDs) {
				return fmt.Errorf("%s: a row of %d values for %d placeholders", firstLine(q), len(r), len(sd.ParamOIDs))
			}
		}
		mq, ok := p.descs.many[q]
		if !ok {
			// A statement manyForm cannot turn ("" here) goes row by row.
			mq, _ = manyForm(q, sd.ParamOIDs, c.TypeMap())
			p.descs.many[q] = mq
		}
		if mq == "" {
			for _, r := range rows {
				if err := p.send(ctx, c, q, r); err != nil {
					return err
				}
				if err := p.sent1(); err != nil {
					return err
				}
			}
			return nil
		}
		for len(rows) > 0 {
			chunk := rows[:min(len(rows), maxManyRows)]
			rows = rows[len(chunk):]
			cols := make([]any, len(sd.ParamOIDs))
			for i := range cols {
				col := make([]any, len(chunk))
				for j, r := range chunk {
					col[j] = r[i]
				}
				cols[i] = col
			}
			if err := p.send(ctx, c, mq, cols); err != nil {
				return err
			}
			if err := p.sent1(); err != nil {
				return err
			}
		}
		return nil
	})
}

// manyForm is one-row write q (PostgreSQL's spelling, placeholders $1 to
// $n of the types oids) as one statement over n arrays, one a
// placeholder, unnested as the rows of "many": an INSERT … VALUES(…)
// takes its rows from them (INSERT … SELECT), an UPDATE … WHERE is
// joined to them (UPDATE … FROM). Each placeholder of q becomes its
// column of many.
func manyForm(q string, oids []uint32, types *pgtype.Map) (string, error) {
	// Compiled here, not at package init: once a statement on a
	// connection.
	placeholder := regexp.MustCompile(`\$([0-9]+)`)
	valuesList := regexp.MustCompile(`\sVALUES\s*\(([^()]*)\)`)
	whereWord := regexp.MustCompile(`\sWHERE\s`)
	cols := make([]string, len(oids))
	arrays := make([]string, len(oids))
	for i, oid := range oids {
		t, ok := types.TypeForOID(oid)
		if !ok {
			return "", fmt.Errorf("placeholder $%d: no type of oid %d", i+1, oid)
		}
		cols[i] = "a" + strconv.Itoa(i+1)
		arrays[i] = fmt.Sprintf("$%d::%s[]", i+1, t.Name)
	}
	var bad error
	body := placeholder.ReplaceAllStringFunc(q, func(m string) string {
		n, err := strconv.Atoi(m[1:])
		if err != nil || n < 1 || n > len(oids) {
			bad = fmt.Errorf("placeholder %s of %d", m, len(oids))
		}
		return "many.a" + m[1:]
	})
	if bad != nil {
		return "", bad
	}
	from := "unnest(" + strings.Join(arrays, ", ") + ") AS many(" + strings.Join(cols, ", ") + ")"
	switch verb := strings.ToUpper(strings.Fields(body + " ")[0]); verb {
	case "INSERT":
		loc := valuesList.FindStringSubmatchIndex(body)
		if loc == nil || len(valuesList.FindAllStringIndex(body, -1)) != 1 || strings.HasPrefix(strings.TrimSpace(body[loc[1]:]), ",") {
			return "", errors.New("not an INSERT of one VALUES list")
		}
		return body[:loc[0]] + " SELECT " + body[loc[2]:loc[3]] + " FROM " + from + body[loc[1]:], nil
	case "UPDATE":
		loc := whereWord.FindAllStringIndex(body, -1)
		if len(loc) != 1 {
			return "", errors.New("not an UPDATE of one WHERE")
		}
		return body[:loc[0][0]] + " FROM " + from + body[loc[0][0]:], nil
	default:
		return "", fmt.Errorf("%s: not an INSERT or an UPDATE", verb)
	}
}
