package container

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"os/user"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"golang.org/x/term"
)

// Cmd is a child process to run.
type Cmd struct {
	Argv   []string
	Env    []string // nil: the current environment
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
}

// Sys is everything sbuild and srun-wrap take from the outside world, so
// tests can replace any of it.
type Sys struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
	// Environ is the environment handed to srun.
	Environ func() []string
	Getwd   func() (string, error)
	Now     func() time.Time
	// LookPath finds a program on PATH.
	LookPath func(string) (string, error)
	// Exec replaces the process (syscall.Exec); it returns only on failure.
	Exec func(path string, argv, env []string) error
	// Run runs a child and returns its exit code; err is set only when it
	// could not be started.
	Run func(ctx context.Context, c Cmd) (int, error)
	// StdinIsTerminal reports whether standard input is a terminal.
	StdinIsTerminal func() bool
	// ReadSecret prompts on stderr and reads a line without echo.
	ReadSecret func(prompt string) (string, error)
	Statfs     func(path string) (FSInfo, error)
	User       func() (User, error)
	// HTTP asks image registries before a build; nil asks none.
	HTTP *http.Client
	// Logger receives debug detail; user-facing messages go to Stderr.
	Logger *slog.Logger
}

// OSSys is Sys wired to the real process, files and terminal.
func OSSys(stdin *os.File, stdout, stderr io.Writer, getenv func(string) string, logger *slog.Logger) Sys {
	return Sys{
		Stdin: stdin, Stdout: stdout, Stderr: stderr, Getenv: getenv,
		Environ:  os.Environ,
		Getwd:    os.Getwd,
		Now:      time.Now,
		LookPath: exec.LookPath,
		Exec:     syscall.Exec,
		Run: func(ctx context.Context, c Cmd) (int, error) {
			cmd := exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
			cmd.Env, cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Env, c.Stdin, c.Stdout, c.Stderr
			err := cmd.Run()
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					return 128 + int(ws.Signal()), nil
				}
				return ee.ExitCode(), nil
			}
			if err != nil {
				return -1, fmt.Errorf("run %s: %w", c.Argv[0], err)
			}
			return 0, nil
		},
		StdinIsTerminal: func() bool { return term.IsTerminal(int(stdin.Fd())) },
		ReadSecret: func(prompt string) (string, error) {
			fmt.Fprint(stderr, prompt)
			if fd := int(stdin.Fd()); term.IsTerminal(fd) {
				// ReadPassword turns echo off and restores the terminal
				// also when the read fails.
				b, err := term.ReadPassword(fd)
				fmt.Fprintln(stderr)
				if err != nil && len(b) == 0 {
					return "", fmt.Errorf("read key from standard input: %w", err)
				}
				return strings.TrimSpace(string(b)), nil
			}
			line, err := bufio.NewReader(stdin).ReadString('\n')
			if err != nil && line == "" {
				return "", fmt.Errorf("read key from standard input: %w", err)
			}
			return strings.TrimSpace(line), nil
		},
		Statfs: func(path string) (FSInfo, error) {
			var st unix.Statfs_t
			if err := unix.Statfs(path, &st); err != nil {
				return FSInfo{}, &os.PathError{Op: "statfs", Path: path, Err: err}
			}
			return FSInfo{Type: int64(st.Type), Avail: st.Bavail * uint64(st.Bsize)}, nil
		},
		User: func() (User, error) {
			u, err := user.Current()
			if err != nil {
				return User{}, fmt.Errorf("look up current user: %w", err)
			}
			uid, _ := strconv.Atoi(u.Uid)
			gid, _ := strconv.Atoi(u.Gid)
			home := getenv("HOME")
			if home == "" {
				home = u.HomeDir
			}
			return User{Name: u.Username, UID: uid, GID: gid, Home: home}, nil
		},
		// HTTP/1.1 with the proxy and the CA store (SSL_CERT_FILE) of the
		// environment, as enroot's curl; the caller's context bounds each
		// question.
		HTTP:   &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment, TLSHandshakeTimeout: 10 * time.Second}},
		Logger: logger,
	}
}
