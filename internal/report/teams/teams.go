// Package teams maps Slurm accounts and users to the teams that reports
// show. Without a mapping file a team is the Slurm account; with one, a
// user listed under a team is that team's wherever they charge, an account
// listed under a team is that team's, and everything else is Unassigned.
// A team may name a parent (an organisation, itself a [teams.NAME] table
// that may hold no accounts or users), at any depth up to MaxDepth.
package teams

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/pelletier/go-toml/v2"
)

// Unassigned is the team of usage the mapping file does not place; it is
// shown, never dropped.
const Unassigned = "(unassigned)"

// MaxDepth bounds how many levels a mapping file's organisations (and
// Slurm's account tree) may nest: deeper is surely a mistake, and a
// report's walk up a tree stays short.
const MaxDepth = 32

// Team is one entry of the mapping file.
type Team struct {
	Accounts []string `toml:"accounts"`
	Users    []string `toml:"users"`
	// Parent is the organisation above the team, "" at the top.
	Parent string `toml:"parent"`
}

// File is the mapping file:
//
//	[teams.vision]
//	accounts = ["vision", "cv-lab"]
//	users    = ["alice"]
//	parent   = "research"
//
//	[teams.research]   # an organisation: teams under it, usage summed
type File struct {
	Teams map[string]Team `toml:"teams"`
}

// Mapping resolves (account, user) to a team. The zero value maps each
// account to itself.
type Mapping struct {
	byUser    map[string]string
	byAccount map[string]string
	parent    map[string]string // team -> its organisation, when it has one
	names     []string
}

// Load reads a mapping file; path "" gives the default mapping.
func Load(path string) (*Mapping, error) {
	if path == "" {
		return &Mapping{}, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("team mapping: %w", err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("team mapping %s: %w", path, err)
	}
	return m, nil
}

// Parse reads mapping file content, refusing unknown keys, a user or an
// account under two teams, and empty names.
func Parse(data []byte) (*Mapping, error) {
	var f File
	dec := toml.NewDecoder(bytes.NewReader(data)).DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		var se *toml.StrictMissingError
		if errors.As(err, &se) && len(se.Errors) > 0 {
			row, _ := se.Errors[0].Position()
			return nil, fmt.Errorf("line %d: unknown key %q (a team has only accounts, users and parent)", row, strings.Join(se.Errors[0].Key(), "."))
		}
		var de *toml.DecodeError
		if errors.As(err, &de) {
			row, _ := de.Position()
			return nil, fmt.Errorf("line %d: %s", row, de.Error())
		}
		return nil, err
	}
	if len(f.Teams) == 0 {
		return nil, errors.New("no [teams.NAME] tables")
	}
	m := &Mapping{byUser: map[string]string{}, byAccount: map[string]string{}, parent: map[string]string{}}
	names := make([]string, 0, len(f.Teams))
	for name := range f.Teams {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if strings.TrimSpace(name) == "" || name == Unassigned {
			return nil, fmt.Errorf("team name %q is reserved or empty", name)
		}
		t := f.Teams[name]
		for _, u := range t.Users {
			if u == "" {
				return nil, fmt.Errorf("team %q: empty user name", name)
			}
			if other, ok := m.byUser[u]; ok && other != name {
				return nil, fmt.Errorf("user %q is in two teams, %q and %q: a user's GPU-hours must count once", u, other, name)
			}
			m.byUser[u] = name
		}
		for _, a := range t.Accounts {
			a = strings.ToLower(a) // Slurm lower-cases accounts
			if a == "" {
				return nil, fmt.Errorf("team %q: empty account name", name)
			}
			if other, ok := m.byAccount[a]; ok && other != name {
				return nil, fmt.Errorf("account %q is in two teams, %q and %q", a, other, name)
			}
			m.byAccount[a] = name
		}
	}
	for _, name := range names {
		p := f.Teams[name].Parent
		if p == "" {
			continue
		}
		if _, ok := f.Teams[p]; !ok {
			return nil, fmt.Errorf("team %q: parent %q is no [teams.%s] table: add one (it may hold no accounts or users) or fix the name", name, p, p)
		}
		m.parent[name] = p
	}
	for _, name := range names {
		if err := m.checkChain(name); err != nil {
			return nil, err
		}
	}
	m.names = names
	return m, nil
}

// checkChain refuses a team whose parents come back to it or nest deeper
// than MaxDepth.
func (m *Mapping) checkChain(name string) error {
	chain := []string{name}
	at := map[string]int{name: 0}
	for p := m.parent[name]; p != ""; p = m.parent[p] {
		chain = append(chain, p)
		if i, ok := at[p]; ok {
			return fmt.Errorf("teams %s form a cycle: an organisation cannot be inside itself", quoteChain(chain[i:]))
		}
		at[p] = len(chain) - 1
		if len(chain) > MaxDepth {
			return fmt.Errorf("team %q is more than %d levels deep (%s ...)", name, MaxDepth, quoteChain(chain[:3]))
		}
	}
	return nil
}

func quoteChain(chain []string) string {
	q := make([]string, len(chain))
	for i, c := range chain {
		q[i] = fmt.Sprintf("%q", c)
	}
	return strings.Join(q, " → ")
}

// Parent is the organisation above team in the mapping file, "" at the
// top (and always without a file: Slurm's tree is the ledger's).
func (m *Mapping) Parent(team string) string { return m.parent[team] }

// Mapped reports whether a mapping file is in use.
func (m *Mapping) Mapped() bool { return m.byUser != nil }

// Team is the team of usage charged by user to account.
func (m *Mapping) Team(account, user string) string {
	if !m.Mapped() {
		if account == "" {
			return Unassigned
		}
		return account
	}
	if t, ok := m.byUser[user]; ok {
		return t
	}
	if t, ok := m.byAccount[account]; ok {
		return t
	}
	return Unassigned
}

// Names lists the mapping file's teams plus Unassigned, sorted; without a
// file it is nil (the teams are whatever accounts the ledger holds).
func (m *Mapping) Names() []string {
	if !m.Mapped() {
		return nil
	}
	return append(append([]string(nil), m.names...), Unassigned)
}
