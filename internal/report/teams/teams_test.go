package teams

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const sample = `
[teams.vision]
accounts = ["vision", "CV-Lab"]
users = ["alice"]

[teams.nlp]
accounts = ["nlp"]
users = ["carol", "dave"]
`

func TestTeam(t *testing.T) {
	m, err := Parse([]byte(sample))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct{ account, user, want string }{
		{"vision", "bob", "vision"},
		{"cv-lab", "bob", "vision"},    // accounts are lower-cased like Slurm's
		{"nlp", "alice", "vision"},     // a listed user wins over the account
		{"physics", "carol", "nlp"},    // wherever they charge
		{"physics", "zoe", Unassigned}, // never dropped
		{"", "", Unassigned},           // no account at all
		{"vision", "", "vision"},       // no user
		{"VISION", "bob", Unassigned},  // the ledger holds lower-case accounts
		{"nlp", "dave", "nlp"},
	}
	for _, tt := range tests {
		if got := m.Team(tt.account, tt.user); got != tt.want {
			t.Errorf("Team(%q, %q) = %q, want %q", tt.account, tt.user, got, tt.want)
		}
	}
	if diff := cmp.Diff([]string{"nlp", "vision", Unassigned}, m.Names()); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
	if !m.Mapped() {
		t.Error("a parsed file is not Mapped")
	}
}

func TestDefaultIsAccount(t *testing.T) {
	m, err := Load("")
	if err != nil {
		t.Fatal(err)
	}
	if m.Mapped() || m.Names() != nil {
		t.Error("the default mapping claims a file")
	}
	if got := m.Team("physics", "alice"); got != "physics" {
		t.Errorf("default team %q, want the account", got)
	}
	if got := m.Team("", "alice"); got != Unassigned {
		t.Errorf("no account: %q", got)
	}
}

func TestParseBad(t *testing.T) {
	tests := []struct{ name, data, want string }{
		{"user in two teams", "[teams.a]\nusers=[\"alice\"]\n[teams.b]\nusers=[\"alice\"]\n", `user "alice" is in two teams, "a" and "b"`},
		{"account in two teams", "[teams.a]\naccounts=[\"x\"]\n[teams.b]\naccounts=[\"X\"]\n", `account "x" is in two teams`},
		{"unknown key", "[teams.a]\nmembers=[\"alice\"]\n", `line 2: unknown key "teams.a.members"`},
		{"wrong type", "[teams.a]\nusers=\"alice\"\n", "line 2"},
		{"no teams", "# nothing\n", "no [teams.NAME] tables"},
		{"reserved name", "[teams.\"(unassigned)\"]\nusers=[\"a\"]\n", "reserved"},
		{"empty user", "[teams.a]\nusers=[\"\"]\n", "empty user"},
		{"not toml", "[teams.a\n", "line 1"},
		{"unknown parent", "[teams.a]\nusers=[\"u\"]\nparent=\"acme\"\n", `team "a": parent "acme" is no [teams.acme] table`},
		{"own parent", "[teams.a]\nparent=\"a\"\n", `teams "a" → "a" form a cycle`},
		{"cycle", "[teams.a]\nparent=\"b\"\n[teams.b]\nparent=\"c\"\n[teams.c]\nparent=\"a\"\n", `teams "a" → "b" → "c" → "a" form a cycle`},
		{"cycle above", "[teams.x]\nparent=\"y\"\n[teams.y]\nparent=\"z\"\n[teams.z]\nparent=\"y\"\n", `teams "y" → "z" → "y" form a cycle`},
		{"too deep", deepChain(MaxDepth + 1), "more than 32 levels deep"},
		{"parent not a string", "[teams.a]\nparent=[\"b\"]\n", "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.data))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want %q", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is more than one line: %q", err)
			}
		})
	}
}

// deepChain is a mapping file of n teams, each the parent of the next.
func deepChain(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "[teams.t%d]\n", i)
		if i > 0 {
			fmt.Fprintf(&b, "parent = \"t%d\"\n", i-1)
		}
	}
	return b.String()
}

// TestParents: organisations nest at any depth up to MaxDepth; a team
// names its parent, the top names none.
func TestParents(t *testing.T) {
	m, err := Parse([]byte(`
[teams.vision]
accounts = ["vision"]
parent = "research"

[teams.nlp]
accounts = ["nlp"]
parent = "research"

[teams.research]
parent = "acme"

[teams.acme]

[teams.ops]
users = ["root"]
`))
	if err != nil {
		t.Fatal(err)
	}
	for team, want := range map[string]string{"vision": "research", "nlp": "research", "research": "acme", "acme": "", "ops": "", Unassigned: "", "nobody": ""} {
		if got := m.Parent(team); got != want {
			t.Errorf("Parent(%q) = %q, want %q", team, got, want)
		}
	}
	if _, err := Parse([]byte(deepChain(MaxDepth))); err != nil {
		t.Errorf("%d levels: %v", MaxDepth, err)
	}
	if got := (&Mapping{}).Parent("vision"); got != "" {
		t.Errorf("no file: parent %q", got)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "teams.toml")
	if err := os.WriteFile(p, []byte("[teams.a]\nusers=[\"u\"]\n[teams.b]\nusers=[\"u\"]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Load(p)
	if err == nil || !strings.HasPrefix(err.Error(), "team mapping "+p+": user \"u\" is in two teams") {
		t.Errorf("error %v", err)
	}
	_, err = Load(filepath.Join(dir, "absent.toml"))
	if err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("missing file: %v", err)
	}
}
