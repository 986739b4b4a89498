// Package teams maps Slurm accounts and users to the teams that reports
// show. Without a mapping file a team is the Slurm account; with one, a
// user listed under a team is that team's wherever they charge, an account
// listed under a team is that team's, and everything else is Unassigned.
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

// Team is one entry of the mapping file.
type Team struct {
	Accounts []string `toml:"accounts"`
	Users    []string `toml:"users"`
}

// File is the mapping file:
//
//	[teams.vision]
//	accounts = ["vision", "cv-lab"]
//	users    = ["alice"]
type File struct {
	Teams map[string]Team `toml:"teams"`
}

// Mapping resolves (account, user) to a team. The zero value maps each
// account to itself.
type Mapping struct {
	byUser    map[string]string
	byAccount map[string]string
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
			return nil, fmt.Errorf("line %d: unknown key %q (a team has only accounts and users)", row, strings.Join(se.Errors[0].Key(), "."))
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
	m := &Mapping{byUser: map[string]string{}, byAccount: map[string]string{}}
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
	m.names = names
	return m, nil
}

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
