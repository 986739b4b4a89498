package reportcmd

import (
	"bytes"
	"time"
)

// testDeps runs commands with fixed clock, width and identity.
func testDeps(now time.Time, env map[string]string) (Deps, *bytes.Buffer, *bytes.Buffer) {
	var out, errb bytes.Buffer
	return Deps{
		Stdout: &out, Stderr: &errb, Getenv: func(k string) string { return env[k] }, Now: func() time.Time { return now },
		Width: func() int { return 0 }, StderrTTY: func() bool { return false },
		Euid: func() int { return 0 }, Username: func() string { return "root (sudo by alice)" },
	}, &out, &errb
}
