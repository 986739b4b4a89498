package config

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"

	"github.com/pelletier/go-toml/v2/unstable"
)

// MaxFileBytes bounds the config file: the commented example is a few KiB,
// so anything near this is not a config and must not fill memory.
const MaxFileBytes = 1 << 20

// utf8BOM is what some editors put before the first key; TOML readers
// disagree on it, so it is dropped rather than made an error.
var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

var errTooLarge = fmt.Errorf("larger than %d bytes: not a config file", MaxFileBytes)

// ReadFile reads a config file (gpusuite's, or a web config file) without
// blocking on it: O_NONBLOCK keeps a FIFO from blocking the open, anything
// but a regular file is refused, and at most MaxFileBytes are read.
func ReadFile(path string) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s, not a regular file", fileKind(st.Mode()))
	}
	if st.Size() > MaxFileBytes {
		return nil, errTooLarge
	}
	// one buffer of the stat'd size (io.ReadAll would grow one from 512
	// bytes, several allocations on every hook start); the limit still
	// holds for a file that grows while it is read
	r := io.LimitReader(f, MaxFileBytes+1)
	data := make([]byte, 0, st.Size()+1)
	for {
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
	}
	if len(data) > MaxFileBytes {
		return nil, errTooLarge
	}
	return data, nil
}

func stripBOM(data []byte) []byte { return bytes.TrimPrefix(data, utf8BOM) }

// withLine adds the line of the key that a validation error names
// (`key "a.b": ...`), so every config error points into the file.
func withLine(data []byte, err error) error {
	msg := err.Error()
	rest, ok := strings.CutPrefix(msg, `key "`)
	if !ok {
		return err
	}
	key, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return err
	}
	if line := keyLine(data, key); line > 0 {
		return fmt.Errorf("line %d: %w", line, err)
	}
	return err
}

// keyLine returns the line that sets key (dotted, e.g. "hooks.timeout"),
// or that sets the inline table holding it; 0 if the file does not set it.
func keyLine(data []byte, key string) int {
	var p unstable.Parser
	p.Reset(data)
	var table []string
	for p.NextExpression() {
		n := p.Expression()
		switch n.Kind {
		case unstable.Table, unstable.ArrayTable:
			table = keyParts(n.Key())
		case unstable.KeyValue:
			full := strings.Join(append(append([]string(nil), table...), keyParts(n.Key())...), ".")
			if full == key || strings.HasPrefix(key, full+".") {
				return p.Shape(n.Raw).Start.Line
			}
		}
	}
	return 0
}

func keyParts(it unstable.Iterator) []string {
	var parts []string
	for it.Next() {
		parts = append(parts, string(it.Node().Data))
	}
	return parts
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a named pipe"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}
