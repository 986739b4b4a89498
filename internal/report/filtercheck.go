package report

import (
	"context"
	"sort"
	"strings"
)

// CheckFilter refuses a filter value the ledger never recorded (a typo
// would otherwise read as "no usage"), naming the value and the nearest
// known ones. Nodes are checked where they are resolved (nodeIDs), and
// clusters where the scope is (Scope).
func (d *Ledger) CheckFilter(ctx context.Context, f Filter) error {
	for _, x := range []struct {
		flag, col string
		vals      []string
	}{
		{"users", "user", f.Users}, {"accounts", "account", f.Accounts}, {"partitions", "partition", f.Partitions},
		{"models", "model", f.Models},
	} {
		if len(x.vals) == 0 {
			continue
		}
		known, err := d.Distinct(ctx, x.col)
		if err != nil {
			return err
		}
		for _, v := range x.vals {
			if known[v] {
				continue
			}
			// Jobs not yet in a rollup (started this hour) still count.
			ok, err := d.inJobs(ctx, x.col, v)
			if err != nil {
				return err
			}
			if ok {
				continue
			}
			return badInput("--%s: no %s %q in %s%s", x.flag, x.col, v, d.path, suggest(v, known))
		}
	}
	return nil
}

// inJobs reports whether any job has col = v.
func (d *Ledger) inJobs(ctx context.Context, col, v string) (bool, error) {
	ok, err := d.st.JobsHave(ctx, col, v)
	return ok, d.wrap(err)
}

// suggest is ": did you mean a, b?" for the known values nearest v, or
// "" when none is near.
func suggest(v string, known map[string]bool) string {
	type cand struct {
		s string
		d int
	}
	var cs []cand
	lv := strings.ToLower(v)
	for k := range known {
		lk := strings.ToLower(k)
		d := editDistance(lv, lk, 3)
		if lk == lv || (len(lv) >= 3 && strings.HasPrefix(lk, lv)) {
			d = 0
		}
		if d <= 2 || (d <= 3 && len(lv) >= 8) {
			cs = append(cs, cand{k, d})
		}
	}
	if len(cs) == 0 {
		return ""
	}
	sort.Slice(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].s < cs[j].s
	})
	if len(cs) > 3 {
		cs = cs[:3]
	}
	names := make([]string, len(cs))
	for i, c := range cs {
		names[i] = c.s
	}
	return ": did you mean " + strings.Join(names, ", ") + "?"
}

// editDistance is the Levenshtein distance of a and b, or limit+1 when it
// is over limit (user names are short; the bound keeps it cheap).
func editDistance(a, b string, limit int) int {
	ra, rb := []rune(a), []rune(b)
	if d := len(ra) - len(rb); d > limit || -d > limit {
		return limit + 1
	}
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(rb)], limit+1)
}
