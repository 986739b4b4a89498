package ingestcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
	"github.com/aicloud/gpusuite/internal/config"
	"github.com/aicloud/gpusuite/internal/store"
	"github.com/aicloud/gpusuite/internal/testkit/ledgerdb"
	"github.com/aicloud/gpusuite/internal/testkit/logs"
)

// ledgerArgs are the options that point ingest at l.
func ledgerArgs(l ledgerdb.Ledger) []string {
	if l.URL != "" {
		return []string{"--store-url", l.URL}
	}
	return []string{"--db", l.Path}
}

func app(stdout, stderr *bytes.Buffer) *cli.App {
	getenv := func(string) string { return "" }
	return &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()}, Writer: stdout, ErrWriter: stderr,
		Commands: []*cli.Command{Command(stdout, stderr, getenv)}}
}

// TestCLIErrors: bad input gives one clear line and a non-zero exit.
func TestCLIErrors(t *testing.T) {
	root := t.TempDir()
	held := ledgerdb.NewLedger(t)
	locked, err := store.Open(context.Background(), store.Options{Path: held.Path, URL: held.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer locked.Close()
	badCfg := filepath.Join(root, "bad.toml")
	if err := os.WriteFile(badCfg, []byte("[store]\njournal_mode = \"fast\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badURL := filepath.Join(root, "url.toml")
	if err := os.WriteFile(badURL, []byte("[store]\nurl = \"sqlite:///data/acct.db\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(root, "nope.toml")
	tests := []struct {
		name     string
		args     []string
		want     string
		wantCode int
	}{
		{"locked store", append([]string{"ingest"}, ledgerArgs(held)...), "locked by another writer", 1},
		{"missing config", []string{"--config", unreadable, "ingest"}, "read config", 1},
		{"bad config value", []string{"--config", badCfg, "ingest"}, "store.journal_mode", 1},
		{"bad store.url in the file", []string{"--config", badURL, "ingest"}, `line 2: key "store.url": must start with postgres:// or postgresql://`, 1},
		// A value an option gave is the option's usage error, named as typed.
		{"bad --store-url", []string{"ingest", "--store-url", "mysql://db/acct"}, `--store-url: must start with postgres://`, 2},
		{"bad keep flag", []string{"ingest", "--keep", "shred", "--db", filepath.Join(root, "x.db")}, `--keep: "shred" is not archive or delete`, 2},
		{"unknown service user", []string{"ingest", "--service-user", "no-such-user-xyz", "--db", filepath.Join(root, "y.db")}, "service user", 1},
		{"missing incoming", append([]string{"ingest", "--incoming", "/nonexistent/incoming"}, ledgerArgs(ledgerdb.NewLedger(t))...), "incoming directory", 1},
		{"unknown option", []string{"ingest", "--bogus"}, "unknown option --bogus (see 'gpuacct ingest --help')", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			code := cliwire.Run(app(&out, &errw), append([]string{"gpuacct"}, tc.args...))
			if code != tc.wantCode {
				t.Errorf("exit %d, want %d; stdout %q", code, tc.wantCode, out.String())
			}
			msg := strings.TrimSuffix(errw.String(), "\n")
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, tc.want)
			}
		})
	}
}

// TestSQLiteCLIErrors: a SQLite file that cannot be made or is named
// relatively.
func TestSQLiteCLIErrors(t *testing.T) {
	tests := []struct {
		name, db, want string
		code           int
	}{
		{"missing db directory", "/nonexistent/dir/acct.db", "open store \"/nonexistent/dir/acct.db\"", 1},
		{"relative db path", "acct.db", `--db: "acct.db" is not an absolute path`, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			if code := cliwire.Run(app(&out, &errw), []string{"gpuacct", "ingest", "--db", tc.db}); code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			msg := strings.TrimSuffix(errw.String(), "\n")
			if !strings.Contains(msg, tc.want) || strings.Contains(msg, "\n") {
				t.Errorf("error %q: want one line containing %q", msg, tc.want)
			}
		})
	}
}

// TestStoreURLHidesPassword: a server that cannot be reached is named,
// in one line, without the URL's password.
func TestStoreURLHidesPassword(t *testing.T) {
	var out, errw bytes.Buffer
	code := cliwire.Run(app(&out, &errw), []string{"gpuacct", "ingest", "--store-url", "postgres://gpusuite:s3cret@127.0.0.1:1/acct?connect_timeout=5"})
	if code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	msg := strings.TrimSuffix(errw.String(), "\n")
	if strings.Contains(msg, "s3cret") || !strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want one line naming the server without the password", msg)
	}
}

// TestStoreURLPrecedence: --store-url > GPUSUITE_STORE_URL > store.url
// in the file > "" (the SQLite file).
func TestStoreURLPrecedence(t *testing.T) {
	const (
		file = "postgres://file/acct"
		env  = "postgres://env/acct"
		flag = "postgres://flag/acct"
	)
	cfgFile := filepath.Join(t.TempDir(), "gpusuite.toml")
	empty := filepath.Join(t.TempDir(), "empty.toml")
	for p, body := range map[string]string{cfgFile: "[store]\nurl = \"" + file + "\"\n", empty: ""} {
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name       string
		withFile   bool
		env, flag  string
		wantURL    string
		wantLocSQL bool
	}{
		{name: "default", wantURL: "", wantLocSQL: true},
		{name: "file", withFile: true, wantURL: file},
		{name: "env over file", withFile: true, env: env, wantURL: env},
		{name: "flag over env", withFile: true, env: env, flag: flag, wantURL: flag},
		{name: "flag alone", flag: flag, wantURL: flag},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("GPUSUITE_STORE_URL", tt.env)
			if tt.env == "" {
				os.Unsetenv("GPUSUITE_STORE_URL")
			}
			var got config.Config
			getenv := func(string) string { return "" }
			a := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()},
				Commands: []*cli.Command{{Name: "ingest", Flags: Flags(), Action: func(c *cli.Context) error {
					var err error
					got, err = Config(c, getenv)
					return err
				}}}}
			args := []string{"gpuacct", "--config", empty, "ingest"}
			if tt.withFile {
				args[2] = cfgFile
			}
			if tt.flag != "" {
				args = append(args, "--store-url", tt.flag)
			}
			if err := a.Run(args); err != nil {
				t.Fatal(err)
			}
			if got.Store.URL != tt.wantURL {
				t.Errorf("store.url %q, want %q", got.Store.URL, tt.wantURL)
			}
			if tt.wantLocSQL && got.Store.Location() != config.Default().Store.Path {
				t.Errorf("location %q, want the SQLite file %q", got.Store.Location(), config.Default().Store.Path)
			}
		})
	}
}

// TestIngestWait: with --wait, ingest waits for the writer that holds the
// ledger, says so, and runs its pass once that writer lets go.
func TestIngestWait(t *testing.T) {
	l := ledgerdb.NewLedger(t)
	holder, err := store.Open(context.Background(), store.Options{Path: l.Path, URL: l.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	root := t.TempDir()
	dirs := map[string]string{}
	for _, d := range []string{"incoming", "quarantine", "archive"} {
		dirs[d] = filepath.Join(root, d)
		if err := os.Mkdir(dirs[d], 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var out bytes.Buffer
	var errw logs.Buffer
	getenv := func(string) string { return "" }
	a := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()}, Writer: &out, ErrWriter: &errw,
		Commands: []*cli.Command{Command(&out, &errw, getenv)}}
	args := append([]string{"gpuacct", "ingest", "--wait", "--sacct", "", "--incoming", dirs["incoming"],
		"--quarantine", dirs["quarantine"], "--archive", dirs["archive"]}, ledgerArgs(l)...)
	done := make(chan int, 1)
	go func() { done <- cliwire.Run(a, args) }()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(errw.String(), "another writer holds the ledger") {
		select {
		case code := <-done:
			t.Fatalf("ingest --wait ended (exit %d) while another writer held the ledger; stderr %q", code, errw.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no waiting line in 60s; stderr %q", errw.String())
		}
	}
	if err := holder.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case code := <-done:
		if code != 0 {
			t.Fatalf("exit %d; stderr %q", code, errw.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("ingest --wait did not take over in 60s; stderr %q", errw.String())
	}
	if !strings.HasPrefix(out.String(), "files 0, records 0") {
		t.Errorf("stdout %q, want the pass's summary", out.String())
	}
}
