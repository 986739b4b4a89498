package servecmd

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/aicloud/gpusuite/internal/cli/cliwire"
)

// TestBadWebConfigFile: a web config file that is missing or invalid
// stops serve before it opens anything, with one line naming the file
// and the key.
func TestBadWebConfigFile(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "web-config.yml")
	if err := os.WriteFile(bad, []byte("basic_auth_users:\n  alice: not-a-hash\ntls_server_config:\n  cert_fil: x\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "gpusuite.toml")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path, env, want string
	}{
		{name: "missing file", path: filepath.Join(dir, "none.yml"), want: "no such file or directory"},
		{name: "invalid file", path: bad, want: "field cert_fil not found"},
		{name: "invalid file from the environment", env: bad, want: "field cert_fil not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			getenv := func(k string) string {
				return map[string]string{"GPUSUITE_CONFIG": empty}[k]
			}
			if tc.env != "" {
				t.Setenv("GPUSUITE_WEB_CONFIG_FILE", tc.env)
			}
			app := &cli.App{Name: "gpuacct", Flags: []cli.Flag{cliwire.ConfigFlag()}, Writer: io.Discard, ErrWriter: io.Discard,
				Commands: []*cli.Command{Command(io.Discard, io.Discard, getenv)}}
			args := []string{"gpuacct", "serve"}
			if tc.path != "" {
				args = append(args, "--web-config-file", tc.path)
			}
			err := app.Run(args)
			path := tc.path + tc.env
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `web config file "`+path+`" (web.config_file, --web-config-file)`) {
				t.Fatalf("serve: %v, want an error naming %s and saying %q", err, path, tc.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error is not one line: %q", err)
			}
		})
	}
}
