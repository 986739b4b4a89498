package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Grain is the rollup a range is read from.
type Grain int

const (
	Hourly     Grain = iota // rollup_hourly
	Daily                   // rollup_daily: whole UTC days
	Monthly                 // rollup_monthly: whole UTC months (schema 2 on)
	ZoneDaily               // rollup_zone_day: whole local days of one zone (ZoneFacts)
	ZoneWeekly              // rollup_zone_week: whole ISO weeks of one zone (ZoneFacts)
)

// rollupOf is each grain's rollup, its node rollup, their time column
// and the seconds a unit of it stands for (a month is counted in days).
var rollupOf = [...]struct {
	table, nodeTable, col string
	unit                  int64
}{
	Hourly:  {"rollup_hourly", "rollup_node_hour", "hour", 3600},
	Daily:   {"rollup_daily", "rollup_node_day", "day", 86400},
	Monthly: {"rollup_monthly", "rollup_node_month", "month", 86400},
	// Keyed by the day's or week's first second: no unit to scale.
	ZoneDaily:  {"rollup_zone_day", "", "start", 1},
	ZoneWeekly: {"rollup_zone_week", "", "start", 1},
}

// FactQuery selects non-ignored rollup rows of one grain. Empty lists
// select everything.
type FactQuery struct {
	Grain Grain
	// From and To are Unix seconds on the grain's boundaries; rows in
	// [From, To) are read.
	From, To int64
	// ByNode keeps the hourly rollup's nodes apart (and NodeIDs may pick
	// some); without it SQLite sums the nodes away.
	ByNode                                        bool
	NodeIDs                                       []int64
	Clusters, Users, Accounts, Partitions, Models []string
	// Sum sums the range into one row a key (Start is From): for a range
	// whose rows all count in one bucket. Not with ByNode.
	Sum bool
	// HourSums reads hours without the node from rollup_hourly_sum
	// (schema 11 on) rather than summing rollup_hourly's nodes.
	HourSums bool
	// Keep is the columns kept apart; the database sums the others away
	// and the rows hold them empty, so that a report by partition hands
	// over a row a partition, not one a user. 0 keeps them all.
	Keep Cols
	// ZoneTZ is the zone ZoneFacts' caller planned its days and weeks in:
	// the rollups must still be in it (ZoneMark.Covers).
	ZoneTZ string
}

// Cols is a set of a rollup's key columns besides the time and the node.
type Cols uint8

// The columns of Cols. The cluster is kept whatever Keep says: a report
// always needs it, and a query that kept nothing would sum no row into
// one of nulls.
const (
	ColCluster Cols = 1 << iota
	ColUser
	ColAccount
	ColPartition
	ColModel
	AllCols = ColCluster | ColUser | ColAccount | ColPartition | ColModel
)

// keyCols are q's key columns in FactRow's order: the kept ones by name
// (in group, what GROUP BY adds after the time and node) and the others
// as empty text. All kept, the rows need no grouping (kept).
func keyCols(q FactQuery, cols ...Cols) (sel, group string, all bool) {
	keep := q.Keep | ColCluster
	if q.Keep == 0 {
		keep = AllCols
	}
	names := map[Cols]string{ColCluster: "cluster", ColUser: "user", ColAccount: "account", ColPartition: "partition", ColModel: "model"}
	var s, g []string
	all = true
	for _, c := range cols {
		if keep&c == 0 {
			s = append(s, "''")
			all = false
			continue
		}
		s = append(s, names[c])
		g = append(g, names[c])
	}
	return strings.Join(s, ", "), strings.Join(g, ", "), all
}

// usageCols are the usage columns, summed or as they are.
func usageCols(sum bool) string {
	if sum {
		return "sum(alloc_gpu_s), sum(used_gpu_s), sum(idle_gpu_s), sum(sample_s), sum(energy_mj), sum(jobs), sum(billing)"
	}
	return "alloc_gpu_s, used_gpu_s, idle_gpu_s, sample_s, energy_mj, jobs, billing"
}

// FactRow is one rollup row: usage of one (cluster, user, account,
// partition, node, model) in one hour, UTC day or UTC month.
type FactRow struct {
	Start                  int64 // Unix seconds
	Cluster, User, Account string
	Partition              string
	NodeID                 int64 // 0 unless hourly by node
	Model                  string
	Usage
}

// Facts calls fn for each row q selects; the row is reused, so fn copies
// what it keeps. Once ctx is done no further row is handed over: Facts
// returns ctx's cause.
func (s *Ledger) Facts(ctx context.Context, q FactQuery, fn func(*FactRow)) error {
	var b strings.Builder
	var args []any
	r := rollupOf[q.Grain]
	table, col, unit := r.table, r.col, r.unit
	if q.Grain == Hourly && q.HourSums && !q.ByNode {
		table = "rollup_hourly_sum"
	}
	sum := q.Sum && !q.ByNode
	// Hours by node are rollup_hourly's rows; without the node, SQLite
	// sums the nodes away (about 30× fewer rows to hand over on a
	// 1,000-GPU cluster), unless rollup_hourly_sum holds them summed.
	node, byNode := "0", q.Grain == Hourly && q.ByNode && !sum
	if byNode {
		node = "node_id"
	}
	keys, group, all := keyCols(q, ColCluster, ColUser, ColAccount, ColPartition)
	model, mgroup, mall := keyCols(q, ColModel)
	if mgroup != "" {
		group += ", " + mgroup
	}
	grouped := sum || !all || !mall || (q.Grain == Hourly && !byNode && table == "rollup_hourly")
	start := col + `*` + strconv.FormatInt(unit, 10)
	if sum {
		// One row a key over the whole range (Start is set to From below).
		start = "0"
	}
	b.WriteString(`SELECT ` + start + `, ` + keys + `, ` + node + `, ` + model + `, ` + usageCols(grouped) + `
 FROM ` + table + ` WHERE ignored = 0 AND ` + col + ` >= ? AND ` + col + ` < ?`)
	args = append(args, q.From/unit, q.To/unit)
	if q.ByNode {
		inList(&b, &args, "node_id", q.NodeIDs)
	}
	inList(&b, &args, "cluster", q.Clusters)
	inList(&b, &args, "user", q.Users)
	inList(&b, &args, "account", q.Accounts)
	inList(&b, &args, "partition", q.Partitions)
	inList(&b, &args, "model", q.Models)
	switch {
	case sum:
		b.WriteString(" GROUP BY " + group)
	case grouped && byNode:
		b.WriteString(" GROUP BY " + col + ", node_id, " + group)
	case grouped:
		b.WriteString(" GROUP BY " + col + ", " + group)
	}
	rows, err := s.db.QueryContext(ctx, b.String(), args...)
	var x FactRow
	return translate(eachRow(rows, err, func(r batchRows) error {
		if err := r.Scan(&x.Start, &x.Cluster, &x.User, &x.Account, &x.Partition, &x.NodeID, &x.Model,
			&x.AllocS, &x.UsedS, &x.IdleS, &x.SampleS, &x.EnergyMJ, &x.Jobs, &x.Billing); err != nil {
			return err
		}
		if sum {
			x.Start = q.From
		}
		fn(&x)
		return stopped(ctx)
	}))
}

// stopped is ctx's cause once ctx is done: a reader asks it after each
// row it hands over, so that a caller which cancels ctx from its callback
// (a report known to be refused) gets no further row, whatever the driver
// still holds.
func stopped(ctx context.Context) error {
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	return nil
}

// Distinct lists, sorted, the distinct values of a rollup column
// (account, user, partition, model, cluster) the grain's rollup (Daily or
// Monthly) ever recorded.
func (s *Ledger) Distinct(ctx context.Context, col string, g Grain) ([]string, error) {
	switch col {
	case "account", "user", "partition", "model", "cluster":
	default:
		return nil, fmt.Errorf("distinct %q: not a rollup column", col)
	}
	out, err := s.texts(ctx, `SELECT DISTINCT `+col+` FROM `+rollupOf[g].table)
	if err != nil {
		return nil, err
	}
	sort.Strings(out)
	return out, nil
}

// texts runs q and returns its one text column.
func (s *Ledger) texts(ctx context.Context, q string, args ...any) ([]string, error) {
	rows, err := translateRows(s.db.QueryContext(ctx, q, args...))
	return collect(rows, err, func(r batchRows, v *string) error { return r.Scan(v) })
}

// JobsHave reports whether any job (user, account, partition, cluster)
// or job part (model) has col = v: a job that started this hour is in no
// rollup yet.
func (s *Ledger) JobsHave(ctx context.Context, col, v string) (bool, error) {
	var q string
	switch col {
	case "user", "account", "partition", "cluster":
		q = `SELECT 1 FROM jobs WHERE ` + col + ` = ? LIMIT 1`
	case "model":
		q = `SELECT 1 FROM job_nodes WHERE model = ? LIMIT 1`
	default:
		return false, fmt.Errorf("filter column %q", col)
	}
	var one int
	err := s.db.QueryRowContext(ctx, q, v).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return err == nil, translate(err)
}
