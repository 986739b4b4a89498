package container

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aicloud/gpusuite/internal/spool"
)

// NGC needs two machines in enroot's credentials file: nvcr.io serves the
// layers, authn.nvidia.com issues the token. With only the first, pulls
// fail with a bare 401.
var ngcMachines = []string{"nvcr.io", "authn.nvidia.com"}

// Credential is one netrc entry.
type Credential struct {
	Machine, Login, Password string
}

// ParseCredentials reads enroot's credentials file (netrc syntax: tokens
// machine/login/password in any layout, '#' comments).
func ParseCredentials(data string) ([]Credential, error) {
	var toks []string
	for _, line := range strings.Split(data, "\n") {
		if i := strings.Index(line, "#"); i >= 0 && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t') {
			line = line[:i]
		}
		toks = append(toks, strings.Fields(line)...)
	}
	var out []Credential
	for i := 0; i < len(toks); i++ {
		switch toks[i] {
		case "machine":
			if i+1 == len(toks) {
				return out, fmt.Errorf("\"machine\" without a host at the end")
			}
			out = append(out, Credential{Machine: toks[i+1]})
			i++
		case "default":
			out = append(out, Credential{Machine: "default"})
		case "login", "password", "account":
			if len(out) == 0 {
				return out, fmt.Errorf("%q before any \"machine\"", toks[i])
			}
			if i+1 == len(toks) {
				return out, fmt.Errorf("%q without a value", toks[i])
			}
			c := &out[len(out)-1]
			switch toks[i] {
			case "login":
				c.Login = toks[i+1]
			case "password":
				c.Password = toks[i+1]
			}
			i++
		default:
			return out, fmt.Errorf("unexpected %q (expected machine, login or password)", toks[i])
		}
	}
	return out, nil
}

// CheckCredentials reports what is wrong with the credentials for
// registry: file missing, unparsable, incomplete, or readable by others.
// It returns nil when a pull from registry can authenticate. Only nvcr.io
// is checked in depth; other registries may allow anonymous pulls.
func CheckCredentials(registry, path string, data []byte, mode fs.FileMode, readErr error) *Finding {
	if registry != "nvcr.io" {
		return nil
	}
	login := "run `sbuild login` and paste your NGC API key (ngc.nvidia.com > Setup > API Key)"
	if readErr != nil {
		if isNotExist(readErr) {
			return &Finding{Level: Fail, Check: "credentials", Msg: fmt.Sprintf("no enroot credentials at %s for nvcr.io; the pull would fail with 401 Unauthorized", path), Fix: login}
		}
		return &Finding{Level: Fail, Check: "credentials", Msg: fmt.Sprintf("cannot read enroot credentials %s: %v", path, readErr), Fix: "fix its permissions (chmod 600 " + path + ") or " + login}
	}
	if mode.Perm()&0o077 != 0 {
		return &Finding{Level: Fail, Check: "credentials", Msg: fmt.Sprintf("enroot credentials %s are readable by others (mode %#o): your NGC key is exposed", path, mode.Perm()), Fix: "chmod 600 " + path + ", then create a new API key on ngc.nvidia.com and run `sbuild login`"}
	}
	creds, err := ParseCredentials(string(data))
	if err != nil {
		return &Finding{Level: Fail, Check: "credentials", Msg: fmt.Sprintf("enroot credentials %s are malformed: %v", path, err), Fix: login + " (it rewrites the NGC lines)"}
	}
	var missing []string
	for _, m := range ngcMachines {
		found := false
		for _, c := range creds {
			if c.Machine == m && c.Login != "" && c.Password != "" {
				found = true
			}
		}
		if !found {
			missing = append(missing, m)
		}
	}
	if len(missing) > 0 {
		return &Finding{Level: Fail, Check: "credentials", Msg: fmt.Sprintf("enroot credentials %s lack a complete \"machine %s login $oauthtoken password KEY\" line; nvcr.io needs both nvcr.io and authn.nvidia.com or pulls fail with 401", path, strings.Join(missing, "\" and \"machine ")), Fix: login}
	}
	return nil
}

// MergeNGCCredentials returns the credentials file with the NGC entries
// replaced by ones for key and every other entry kept as written.
func MergeNGCCredentials(old, key string) string {
	var keep []string
	skip := false
	for _, line := range strings.Split(old, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "machine" {
			skip = f[1] == ngcMachines[0] || f[1] == ngcMachines[1]
		} else if len(f) > 0 && f[0] == "default" {
			skip = false
		}
		if skip || (len(keep) == 0 && strings.TrimSpace(line) == "") {
			continue
		}
		keep = append(keep, line)
	}
	out := strings.TrimRight(strings.Join(keep, "\n"), "\n")
	if out != "" {
		out += "\n"
	}
	for _, m := range ngcMachines {
		out += fmt.Sprintf("machine %s login $oauthtoken password %s\n", m, key)
	}
	return out
}

// WriteCredentials replaces the NGC entries of the credentials file at
// path with ones for key, keeping other entries, atomically and mode 600.
func WriteCredentials(path, key string) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %q: %w", dir, err)
	}
	old, err := os.ReadFile(path)
	if err != nil && !isNotExist(err) {
		return fmt.Errorf("read %q: %w", path, err)
	}
	// Mode 600 from the temporary file on: the key is never readable by others.
	return spool.ReplaceFile(path, strings.NewReader(MergeNGCCredentials(string(old), key)), 0o600)
}
