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

// execMany runs the one-row write q once for each of rows, in order. On
// PostgreSQL that is one statement over one array a column (manyForm):
// a batch's hundreds of job-hour and rollup rows cost the server one
// statement each kind, not one each row. The rows must differ in what
// the statement finds its row by (an INSERT's conflict target, an
// UPDATE's WHERE): a statement over arrays changes a row once, and
// fails for a second change of it; only an INSERT … DO NOTHING takes
// the same key twice (the first stands, as one statement after the
// other). On SQLite, in process, each row is its statement.
func (b *Batch) execMany(q string, rows [][]any) error {
	if b.tx.pipe == nil || len(rows) == 1 {
		for _, r := range rows {
			if _, err := b.exec(q, r...); err != nil {
				return err
			}
		}
		return nil
	}
	if len(rows) == 0 {
		return nil
	}
	for _, r := range rows {
		pgArgs(true, r)
	}
	return b.tx.pipe.addMany(b.ctx, b.tx.sql(q), rows)
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
