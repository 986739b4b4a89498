package containercmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sbuild speaks the researcher's language: LC_ALL, then LC_MESSAGES,
// then LANG; English is unchanged.
func TestSbuildSpeaksJapanese(t *testing.T) {
	proj := filepath.Join(t.TempDir(), "proj")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want string // stdout holds it
	}{
		{"list, LANG=ja", map[string]string{"LANG": "ja_JP.UTF-8"}, []string{"list"}, "にコンテナはありません。作成するには: sbuild [IMAGE]"},
		{"list, English", map[string]string{"LANG": "en_US.UTF-8"}, []string{"list"}, "no containers in "},
		{"list, LC_ALL=C over LANG=ja", map[string]string{"LC_ALL": "C", "LANG": "ja_JP.UTF-8"}, []string{"list"}, "no containers in "},
		{"check, LC_MESSAGES=ja", map[string]string{"LC_MESSAGES": "ja_JP.UTF-8", "LANG": "C"}, []string{"check", "ubuntu"}, "問題はありません"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"ENROOT_DATA_PATH": t.TempDir()}
			for k, v := range tc.env {
				env[k] = v
			}
			f := newFake(t, proj, env)
			cfg := filepath.Join(t.TempDir(), "site.toml")
			if err := os.WriteFile(cfg, []byte("[container]\nenroot_conf = \"/nonexistent\"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			code := Sbuild(append([]string{"sbuild"}, append(tc.args, "--config", cfg)...), f.sys)
			if code != 0 || !strings.Contains(f.out.String(), tc.want) {
				t.Errorf("sbuild %v with %v: exit %d\nstdout %q\nstderr %q\nwant stdout with %q", tc.args, tc.env, code, f.out.String(), f.err.String(), tc.want)
			}
		})
	}
}
