package ingest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/cliwire"
	"github.com/aicloud/gpusuite/internal/store"
)

// TestCLIErrors: bad input gives one clear line and a non-zero exit.
func TestCLIErrors(t *testing.T) {
	root := t.TempDir()
	lockedPath := filepath.Join(root, "gpuacct.db")
	locked, err := store.Open(context.Background(), store.Options{Path: lockedPath})
	if err != nil {
		t.Fatal(err)
	}
	defer locked.Close()
	badCfg := filepath.Join(root, "bad.toml")
	if err := os.WriteFile(badCfg, []byte("[store]\njournal_mode = \"fast\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	unreadable := filepath.Join(root, "nope.toml")
	tests := []struct {
		name     string
		args     []string
		want     string
		wantCode int
	}{
		{"locked store", []string{"ingest", "--db", lockedPath}, "locked by another writer", 1},
		{"missing db directory", []string{"ingest", "--db", "/nonexistent/dir/acct.db"}, "open store \"/nonexistent/dir/acct.db\"", 1},
		{"missing config", []string{"--config", unreadable, "ingest"}, "read config", 1},
		{"bad config value", []string{"--config", badCfg, "ingest"}, "store.journal_mode", 1},
		{"bad keep flag", []string{"ingest", "--keep", "shred", "--db", filepath.Join(root, "x.db")}, "ingest.keep", 1},
		{"relative db path", []string{"ingest", "--db", "acct.db"}, "not an absolute path", 1},
		{"unknown service user", []string{"ingest", "--service-user", "no-such-user-xyz", "--db", filepath.Join(root, "y.db")}, "service user", 1},
		{"missing incoming", []string{"ingest", "--db", filepath.Join(root, "z.db"), "--incoming", "/nonexistent/incoming"}, "incoming directory", 1},
		{"unknown option", []string{"ingest", "--bogus"}, "unknown option --bogus (see 'gpuacct ingest --help')", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out, errw bytes.Buffer
			getenv := func(string) string { return "" }
			app := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()}, Writer: &out, ErrWriter: &errw,
				Commands: []*cli.Command{Command(&out, &errw, getenv)}}
			code := cliwire.Run(app, append([]string{"gpuacct"}, tc.args...))
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
