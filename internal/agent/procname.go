package agent

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

const (
	// maxCmdlineRead bounds the read of /proc/PID/cmdline: argv[0] is at
	// its start, and a process's arguments can run to megabytes.
	maxCmdlineRead = 4096
	// maxProcName bounds a process's command name in bytes: a board cell
	// and a live file have no room for a path-long name.
	maxProcName = 32
)

// procName is the command name of process pid under procRoot: the base
// name of its argv[0], else of its comm (a kernel thread or a process
// that cleared its argv), cleaned by cleanProcName. A process gone by
// now, or one whose files cannot be read, has none.
func procName(procRoot string, pid uint32) string {
	dir := filepath.Join(procRoot, strconv.FormatUint(uint64(pid), 10))
	b := readHead(filepath.Join(dir, "cmdline"), maxCmdlineRead)
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if len(bytes.TrimSpace(b)) == 0 {
		b = bytes.TrimRight(readHead(filepath.Join(dir, "comm"), 64), "\n")
	}
	return cleanProcName(string(b))
}

// readHead is at most limit bytes from the start of path, nil when it
// cannot be read.
func readHead(path string, limit int64) []byte {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, limit))
	if err != nil {
		return nil
	}
	return b
}

// cleanProcName is argv0's base name as a board may show it: valid
// UTF-8 without control characters (a name is the process's own to
// choose), at most maxProcName bytes, cut at a rune's boundary. The web
// templates escape it; this only keeps it printable and short.
func cleanProcName(argv0 string) string {
	argv0 = strings.TrimRight(argv0, "/")
	argv0 = argv0[strings.LastIndexByte(argv0, '/')+1:]
	var b []byte
	for _, r := range argv0 {
		if r == utf8.RuneError || unicode.IsControl(r) {
			continue
		}
		if len(b)+utf8.RuneLen(r) > maxProcName {
			break
		}
		b = utf8.AppendRune(b, r)
	}
	return string(bytes.TrimSpace(b))
}
