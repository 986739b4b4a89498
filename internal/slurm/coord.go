package slurm

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The sacctmgr questions whose answers ParseCoordination reads: who
// coordinates which accounts, and each account's parent and users.
// Slurm 22.05 has no "show coordinator"; the coordinators are a column
// of "show user withcoord".
var (
	CoordArgs = []string{"-n", "-P", "show", "user", "withcoord", "format=User,Coordinators"}
	AssocArgs = []string{"-n", "-P", "show", "assoc", "format=Account,ParentName,User"}
)

// maxAccountDepth bounds the walk down the account tree: Slurm refuses
// cycles, so deeper is a broken answer, not a tree.
const maxAccountDepth = 64

// Coordination is Slurm's team leads: for each coordinator, the users
// with an association in an account they coordinate or one below it, as
// sacctmgr shows them to a coordinator. The zero value and nil know none.
type Coordination struct {
	users map[string]map[string]bool
	// accounts are, for each coordinator, the accounts they coordinate
	// and those below them: whose budgets they see.
	accounts map[string]map[string]bool
}

// Sees reports whether coordinator coord sees user u.
func (c *Coordination) Sees(coord, u string) bool {
	return c != nil && c.users[coord][u]
}

// Accounts are the accounts coord coordinates and those below them,
// sorted; none for a user who coordinates none.
func (c *Coordination) Accounts(coord string) []string {
	if c == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(c.accounts[coord]))
}

// Coordinators is how many users coordinate an account.
func (c *Coordination) Coordinators() int {
	if c == nil {
		return 0
	}
	return len(c.users)
}

// ParseCoordination reads the answers to CoordArgs (coords: "user|acct1,acct2")
// and AssocArgs (assocs: "account|parent|" for an account,
// "account||user" for a user's association). Lines of another shape
// are counted in skipped; an account tree deeper than maxAccountDepth is
// an error.
func ParseCoordination(coords, assocs []byte) (c *Coordination, skipped int, err error) {
	children := map[string][]string{}
	members := map[string][]string{}
	for f := range lines(assocs, 3, &skipped) {
		account, parent, user := f[0], f[1], f[2]
		switch {
		case account == "":
			skipped++
		case user != "":
			members[account] = append(members[account], user)
		case parent != "":
			children[parent] = append(children[parent], account)
		}
	}
	c = &Coordination{users: map[string]map[string]bool{}, accounts: map[string]map[string]bool{}}
	for f := range lines(coords, 2, &skipped) {
		coord, accounts := f[0], f[1]
		if coord == "" {
			skipped++
			continue
		}
		for a := range strings.SplitSeq(accounts, ",") {
			if a = strings.TrimSpace(a); a == "" {
				continue
			}
			seen, accts := c.users[coord], c.accounts[coord]
			if seen == nil {
				seen, accts = map[string]bool{}, map[string]bool{}
			}
			if err := under(a, children, members, seen, accts, 0); err != nil {
				return nil, skipped, err
			}
			c.users[coord], c.accounts[coord] = seen, accts
		}
	}
	return c, skipped, nil
}

// under adds the users of account a and of the accounts below it to
// seen, and the accounts to accts.
func under(a string, children, members map[string][]string, seen, accts map[string]bool, depth int) error {
	if depth > maxAccountDepth {
		return fmt.Errorf("sacctmgr account tree: deeper than %d accounts below %q", maxAccountDepth, a)
	}
	accts[a] = true
	for _, u := range members[a] {
		seen[u] = true
	}
	for _, ch := range children[a] {
		if err := under(ch, children, members, seen, accts, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// lines yields the n trimmed fields of each line of sacctmgr -n -P
// output; a blank line is passed over, one of another number of fields
// counted in skipped.
func lines(out []byte, n int, skipped *int) func(func([]string) bool) {
	return func(yield func([]string) bool) {
		for line := range strings.SplitSeq(string(out), "\n") {
			if strings.TrimSpace(line) == "" {
				continue
			}
			f := strings.Split(strings.TrimRight(line, "\r"), "|")
			if len(f) != n {
				*skipped++
				continue
			}
			for i := range f {
				f[i] = strings.TrimSpace(f[i])
			}
			if !yield(f) {
				return
			}
		}
	}
}
